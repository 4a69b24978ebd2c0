import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
@testable import VaultSync

/// IndexInvariantTests' walk with merges (docs/FORMAT.md §15.7, "Sync"): random changes on two
/// devices of one vault of index 3, syncs between them through a real rclone remote; after each
/// commit on either side, each sync, and on the remote, the derived records are exactly those of
/// the tree, and the sync base's pins keep their bits (fsck clean, every open's check passes).
@Suite(.serialized) struct IndexInvariantMergeTests {
    typealias Three = IndexThreeSync

    @Test(arguments: [UInt64(5), 17])
    func randomChangesOnTwoDevicesAndSyncsKeepTheRecordsExact(seed: UInt64) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let a = try SyncDevice("i3-merge-a", indexThree: true), b = try SyncDevice("i3-merge-b", indexThree: true)
        defer { a.finish(); b.finish() }
        try a.write("start.txt", "from a")
        try a.sync(remote)
        try Three.expectRemoteExact(a, remote, "first sync")
        try b.sync(remote)
        #expect(Three.isThree(b) && Three.entryHashKey(b) == Three.entryHashKey(a), "b joined with a's EHK")
        try Three.expectExact(b, "b joined")
        var generator = TreeMergePropertyTests.Generator(state: seed)
        for round in 0..<6 {
            try Three.randomChanges(a, &generator, step: round * 2)
            try Three.randomChanges(b, &generator, step: round * 2 + 1)
            // b merges a's changes, a merges b's, b takes the merged state.
            for (device, label) in [(a, "a"), (b, "b"), (a, "a again"), (b, "b again")] {
                try device.sync(remote)
                try Three.expectExact(device, "round \(round), \(label) synced")
                try Three.expectRemoteExact(device, remote, "round \(round), \(label) synced")
            }
            #expect(try a.tree() == b.tree(), "round \(round): one tree")
        }
        // A third device joins the merged vault: its open checks the records it took.
        let c = try SyncDevice("i3-merge-c", indexThree: true)
        defer { c.finish() }
        try c.sync(remote)
        #expect(try c.tree() == a.tree())
        try Three.expectExact(c, "c joined")
    }
}
