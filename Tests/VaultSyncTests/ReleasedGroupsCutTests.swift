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
/// mutation of such a sync: the storage checks clean and reads as before the sync or merged,
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

    @Test func aSyncKilledAtAnyMutationWhileItTakesAReleaseLosesNothing() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try second.write("big.bin", Self.big(10 << 20))
        try second.sync(remote)
        try first.sync(remote)
        #expect(try first.read("big.bin") == Self.big(10 << 20))
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

        let victim = try first.snapshot(), remoteCopy = remote.path + "-copy"
        try FileManager.default.copyItem(atPath: remote.path, toPath: remoteCopy)
        defer { try? FileManager.default.removeItem(atPath: remoteCopy) }
        let counting = CutStorageFolder(try Storage.open(at: first.folder), cutAt: nil)
        try first.sync(remote, storage: counting) { _ in }
        #expect(counting.done.filter { $0 == "remove" }.count >= released, "the sync removed the released files: \(counting.done)")
        #expect(try first.tree() == expected)

        var failures: [String] = []
        for cut in 0..<counting.mutations {
            try first.restore(victim)
            try SyncDevice.copyFolder(remoteCopy, over: remote.path)
            let storage = CutStorageFolder(try Storage.open(at: first.folder), cutAt: cut)
            do { try first.sync(remote, storage: storage) { _ in } } catch {}
            let report = try first.vault.check()
            let tree = try? first.tree()
            if !report.isClean || (tree != before && tree != expected) {
                failures.append("cut before mutation \(cut) (after \(storage.done.suffix(3))): \(report.damagedItems) \(report.storageProblems), "
                    + "reads: \(tree == before ? "before" : tree == expected ? "merged" : "neither")")
                continue
            }
            let next = try first.sync(remote), after = try first.tree()
            if next.conflicts != 0 || after != expected {
                failures.append("cut before mutation \(cut): the next sync gave \(next.actions)")
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        try second.sync(remote)
        #expect(try second.tree() == expected)
        for device in [first, second] {
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.damagedItems) \(report.storageProblems)")
        }
    }
}
