import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A sync whose direct downloads fall in groups of another device that this storage lacks
/// (FORMAT.md §13.11, "Downloads are staged"). Renamed in alone, they left the count off a
/// multiple of 16 until the merge filled the groups' other files, and a kill in between left a
/// storage that a read-only open (`dotsafe fsck`) reports (`SEED=4242 tools/sync-crash-trials`,
/// trial 2). Cut at each storage mutation from the sync's first placement to its commit: a
/// read-only open sees a clean storage, the writing open reads it as before the sync or merged,
/// and the next sync brings both devices' files (the group's filled names came down after all).
@Suite(.serialized) struct FilledGroupsCutTests {
    @Test func aSyncKilledAfterAnyPlacementLeavesWholeGroups() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        // Two dozen chunk files and their pages: new groups of the second device, whose pages
        // come down before the chunks of the same group.
        let big = ReleasedGroupsCutTests.big(6 << 20)
        try second.write("big.bin", big)
        try second.sync(remote)
        try first.write("from-first.txt", "made on the first")
        let before = try first.tree()
        var expected = before
        expected["big.bin"] = big

        let run = try CutSyncRun(first, remote, before: before, expected: expected)
        defer { run.remove() }
        let counting = CutStorageFolder(try Storage.open(at: first.folder), cutAt: nil)
        var committed = 0
        try first.sync(remote, storage: counting) { step in
            if step == "upload" { committed = counting.mutations }
        }
        #expect(try first.tree() == expected)
        let placed = try #require(counting.done.firstIndex(of: "placeDownloads"), "the sync placed direct downloads: \(counting.done)")
        #expect(committed > placed + 1, "the merge's commit came after the placements: \(counting.done)")

        var failures: [String] = []
        for cut in placed + 1...committed { failures += try run.cut(at: cut, seeing: true) }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        try run.finish(with: second)
    }
}
