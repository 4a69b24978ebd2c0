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

        let victim = try first.snapshot(), remoteCopy = remote.path + "-copy"
        try FileManager.default.copyItem(atPath: remote.path, toPath: remoteCopy)
        defer { try? FileManager.default.removeItem(atPath: remoteCopy) }
        let counting = CutStorageFolder(try Storage.open(at: first.folder), cutAt: nil)
        var committed = 0
        try first.sync(remote, storage: counting) { step in
            if step == "upload" { committed = counting.mutations }
        }
        #expect(try first.tree() == expected)
        let placed = try #require(counting.done.firstIndex(of: "placeDownloads"), "the sync placed direct downloads: \(counting.done)")
        #expect(committed > placed + 1, "the merge's commit came after the placements: \(counting.done)")

        var failures: [String] = []
        for cut in placed + 1...committed {
            try first.restore(victim)
            try SyncDevice.copyFolder(remoteCopy, over: remote.path)
            let storage = CutStorageFolder(try Storage.open(at: first.folder), cutAt: cut)
            #expect(throws: (any Error).self) { try first.sync(remote, storage: storage, seeing: true) { _ in } }
            let after = storage.done.suffix(2)
            if !first.seenAfterCut.isEmpty { failures.append("cut before mutation \(cut) (after \(after)), read-only: \(first.seenAfterCut)") }
            let report = try first.vault.check()
            let tree = try? first.tree()
            if !report.isClean || (tree != before && tree != expected) {
                failures.append("cut before mutation \(cut): \(report.damagedItems) \(report.storageProblems), "
                    + "reads: \(tree == before ? "before" : tree == expected ? "merged" : "neither")")
                continue
            }
            let next = try first.sync(remote), merged = try first.tree()
            if next.conflicts != 0 || merged != expected {
                failures.append("cut before mutation \(cut): the next sync gave \(next.actions)")
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        try second.sync(remote)
        #expect(try second.tree() == expected)
        for device in [first, second] {
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.damagedItems) \(report.storageProblems)")
            #expect(try Storage.open(at: device.folder).listFiles().count % Format.groupSize == 0)
        }
    }
}
