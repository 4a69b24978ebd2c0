import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultStore
@testable import VaultSync

/// R-SYN-5 for index version 3 (docs/FORMAT.md §15.1, §15.7): a sync of an index-3 vault, and
/// the sync that converts an index-2 device because the remote's root is of version 3, cut
/// before each change of the remote and before storage mutations (a process that died there).
/// After each cut a read-only open (fsck) finds the storage clean, the vault opens with the
/// tree of before the sync or the merged one, of index 3 with exact records where it is index 3,
/// and the next sync brings the merged tree as index 3; at the end the other device syncs, both
/// check clean and the remote's records are exact. Real vaults, a real rclone, a folder remote.
@Suite(.serialized) struct IndexThreeSyncCutTests {
    typealias Three = IndexThreeSync

    /// The cuts a test makes, among the changes of the remote and the storage mutations of the
    /// sync: `DOTSAFE_I3_SYNC_CUTS` of them (default 4, about a minute for both tests on a loaded
    /// machine; `all`: every one, as tools/index-three-sync-cut-trials does), chosen by
    /// `DOTSAFE_I3_SYNC_SEED` (default: a new one each run, printed and named in every failure).
    static let sample: OwnerFollowCutTests.Sample = {
        let environment = ProcessInfo.processInfo.environment
        return OwnerFollowCutTests.Sample(seed: environment["DOTSAFE_I3_SYNC_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...999_999),
                                          count: environment["DOTSAFE_I3_SYNC_CUTS"] == "all" ? nil
                                              : environment["DOTSAFE_I3_SYNC_CUTS"].flatMap { Int($0) } ?? 4)
    }()

    static var sampleText: String {
        "DOTSAFE_I3_SYNC_SEED=\(sample.seed) DOTSAFE_I3_SYNC_CUTS=\(sample.count.map(String.init) ?? "all")"
    }

    /// The names of the remote's changes a sync passed, as `SyncDevice.StopAt` counts them.
    final class Labels: @unchecked Sendable {  // used by one sync on the test's thread
        var names: [String] = []
        func add(_ change: String) {
            let count = names.filter { $0 == change || $0.hasPrefix(change + "#") }.count + 1
            names.append(count > 1 ? "\(change)#\(count)" : change)
        }
    }

    /// Where a sync is cut: before a change of the remote, or before a storage mutation.
    enum Cut { case remote(String), storage(Int) }

    /// Runs the sync once to count its storage mutations and the remote's changes, then cuts it
    /// at the sample's choice of them.
    static func cutEverywhere(_ run: CutSyncRun, _ context: String) throws {
        let counting = CutStorageFolder(try Storage.open(at: run.device.folder), cutAt: nil), labels = Labels()
        try run.device.sync(run.remote, storage: counting) { labels.add($0) }
        #expect(try run.device.tree() == run.expected, "\(context): the sync without cuts")
        #expect(counting.mutations > 10 && labels.names.contains("root"), "\(context): \(counting.done) \(labels.names)")
        let cuts = sample.choose(labels.names.map(Cut.remote) + (0..<counting.mutations).map(Cut.storage))
        print("IndexThreeSyncCutTests: \(context): \(cuts.count) cuts of \(labels.names.count) remote changes and "
              + "\(counting.mutations) storage mutations (\(sampleText)): \(cuts)")
        var failures: [String] = []
        for cut in cuts {
            switch cut {
            case .remote(let label): failures += try run.cut(before: label, seeing: true)
            case .storage(let mutation): failures += try run.cut(at: mutation, seeing: true)
            }
        }
        #expect(failures.isEmpty, "\(context) (\(sampleText)): \(failures.joined(separator: "; "))")
    }

    @Test func aSyncOfAnIndexThreeVaultCutAnywhereLosesNothing() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let a = try SyncDevice("i3-cut-a", indexThree: true), b = try SyncDevice("i3-cut-b", indexThree: true)
        defer { a.finish(); b.finish() }
        try a.makeFolder("docs")
        try a.write("docs/plan.txt", "plan v1")
        try a.write("notes.txt", "notes v1")
        try a.sync(remote)
        try b.sync(remote)
        try b.write("from-b.txt", "made on b")
        try b.write("notes.txt", "notes v2 from b")
        try b.sync(remote)
        try a.write("from-a.txt", "made on a")
        try a.write("big.bin", ReleasedGroupsCutTests.big(300_000))
        try a.rename("docs/plan.txt", to: "plan-renamed.txt")
        let before = try a.tree()
        var expected = before
        expected["from-b.txt"] = "made on b"
        expected["notes.txt"] = "notes v2 from b"

        var run = try CutSyncRun(a, remote, before: before, expected: expected)
        defer { run.remove() }
        run.inspect = { place in
            #expect(Three.isThree(a), "\(place): index 3")
            try Three.expectExact(a, place)
        }
        try Self.cutEverywhere(run, "a sync of index 3")
        try run.finish(with: b)
        try Three.expectExact(b, "the other device at the end")
        try Three.expectRemoteExact(b, remote, "the remote at the end")
    }

    @Test func theSyncThatConvertsADeviceToIndexThreeCutAnywhereLosesNothing() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (a, b) = try VaultSyncTests.twoDevices(remote)
        defer { a.finish(); b.finish() }
        // a converts (as `dotsafe upgrade` asks) and publishes index 3.
        a.indexThree = true
        try a.reopen()
        a.vault.state.withLock { $0.committer.convertsToIndexThree = true }
        try a.write("from-a.txt", "made on a, converting")
        try a.sync(remote)
        try b.write("from-b.txt", "made on b")
        try b.write("big.bin", ReleasedGroupsCutTests.big(300_000))
        b.indexThree = true
        try b.reopen()
        #expect(!Three.isThree(b), "b holds a sync base: it converts only through the remote")
        let before = try b.tree()
        var expected = before
        expected["from-a.txt"] = "made on a, converting"

        var run = try CutSyncRun(b, remote, before: before, expected: expected)
        defer { run.remove() }
        run.inspect = { place in
            let three = Three.isThree(b), merged = try b.tree() == expected
            // The sync's commit converts: index 2 with the tree of before, index 3 merged.
            #expect(three == merged, "\(place): index 3 is \(three), merged \(merged)")
            if three { try Three.expectExact(b, place) }
        }
        try Self.cutEverywhere(run, "the converting sync")
        try run.finish(with: a)
        try Three.expectExact(a, "the other device at the end")
        try Three.expectRemoteExact(a, remote, "the remote at the end")
    }
}
