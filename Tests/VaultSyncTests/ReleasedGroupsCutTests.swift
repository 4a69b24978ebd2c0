import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultStore
@testable import VaultSync

/// A sync that takes in another device's release of groups (FORMAT.md §9.2, §13.11) removes
/// that device's files of those groups here. This device's last commit can still reference
/// them (its items from before the other device deleted the file): removed before the merge's
/// commit, a kill in between left committed items on files that are gone. Cut at each storage
/// mutation of such a sync (inside a run of removals, only at its first two and its last: the
/// ones between cut alike): the storage checks clean and reads as before the sync or merged,
/// and the next sync completes with both devices' files.
@Suite(.serialized) struct ReleasedGroupsCutTests {
    /// Letters of a fixed pseudo-random sequence: several groups of files, however it packs.
    static func big(_ count: Int) -> String {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        return String(decoding: (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(0x61 + (state >> 33) % 26)
        }, as: UTF8.self)
    }

    /// Every mutation's index of `kinds`, but a removal that is neither among the first two of
    /// its run of removals nor its last.
    static func cutPoints(_ kinds: [String]) -> [Int] {
        kinds.indices.filter { index in
            guard kinds[index] == "remove", index >= 2, kinds[index - 1] == "remove", kinds[index - 2] == "remove" else { return true }
            return index + 1 == kinds.count || kinds[index + 1] != "remove"
        }
    }

    @Test func aSyncKilledAtAnyMutationWhileItTakesAReleaseLosesNothing() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        // 28 chunk files: past the second device's first group, one whole group of them.
        try second.write("big.bin", Self.big(7 << 20))
        try second.sync(remote)
        try first.sync(remote)
        #expect(try first.read("big.bin") == Self.big(7 << 20))
        // The second device deletes it; its files are free after the sync that published the
        // delete, and the next commit releases their groups.
        let held = try Storage.open(at: second.folder).listFiles().count
        try second.vault.remove(Array("big.bin".utf8), from: Vault.rootID)
        try second.vault.commit()
        try second.sync(remote)
        try second.write("after.txt", "after the release")
        try second.sync(remote)
        try second.write("after.txt", "after the release, again")
        try second.sync(remote)
        let released = held - (try Storage.open(at: second.folder).listFiles().count)
        #expect(released >= 16, "the second device released groups: \(released) files fewer")
        try first.write("from-first.txt", "made on the first")
        let before = try first.tree()
        var expected = before
        expected["big.bin"] = nil
        expected["after.txt"] = "after the release, again"

        let run = try CutSyncRun(first, remote, before: before, expected: expected)
        defer { run.remove() }
        let counting = CutStorageFolder(try Storage.open(at: first.folder), cutAt: nil)
        try first.sync(remote, storage: counting) { _ in }
        #expect(counting.done.filter { $0 == "remove" }.count >= released, "the sync removed the released files: \(counting.done)")
        #expect(try first.tree() == expected)

        let cuts = Self.cutPoints(counting.done)
        #expect(cuts.count < counting.mutations - 10, "a run of removals is cut at three of its mutations: \(cuts.count) of \(counting.mutations)")
        var failures: [String] = []
        for cut in cuts { failures += try run.cut(at: cut) }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        try run.finish(with: second)
    }
}
