import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
@testable import VaultSync

/// A sync cut after its local commit and before its remote root is known to be up, while
/// another device publishes (FORMAT.md §13.11, "Sync base"): the base this device keeps must be
/// a state the remote is known to hold, or the other device's root, which lacks this device's
/// changes, reads at the next merge as their deletion. Real vaults, a real rclone, a folder remote.
@Suite(.serialized) struct CutSyncTests {
    /// "upload": before anything goes up; "root": before the remote root; "root#2": after the
    /// root and before its copy (the root landed, but the sync never learnt it).
    @Test(arguments: ["upload", "root", "root#2"])
    func aCutSyncLosesNothingWhenAnotherDevicePublishesMeanwhile(stop: String) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }

        try first.write("from-first.txt", "made on the first")
        try first.write("docs/plan.txt", "plan v2 from the first")
        #expect(throws: SyncDevice.Stop.self) { try first.sync(remote, stoppingAt: stop) }
        #expect(try first.read("from-first.txt") == "made on the first", "the local commit came before the cut")

        try second.write("from-second.txt", "made on the second")
        try second.write("notes.txt", "notes v2 from the second")
        try second.sync(remote)
        let merged = try first.sync(remote)
        #expect(merged.conflicts == 0, "\(merged.actions)")
        try second.sync(remote)

        let expected: [String: String] = [
            "docs/": "", "docs/plan.txt": "plan v2 from the first", "notes.txt": "notes v2 from the second",
            "from-first.txt": "made on the first", "from-second.txt": "made on the second",
        ]
        #expect(try first.tree() == expected, "\(stop): the first device")
        #expect(try second.tree() == expected, "\(stop): the second device")
        #expect(try second.sync(remote) == SyncSummary(), "\(stop): the last to sync has nothing left to do")
    }

    /// A sync killed while its root's copy goes up leaves that slot file torn on a server that
    /// writes in place (`rclone serve webdav` does): `SEED=29422 tools/sync-crash-trials 5` found
    /// one of 65,536 bytes on the remote after the victim's next sync, which had nothing to
    /// publish. A torn root slot or record of the vault makes the next sync publish again.
    /// `mounted`: a mount's round.
    @Test(arguments: [false, true])
    func aRootSlotTornOnTheRemoteIsWholeAfterTheNextSync(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try first.write("from-first.txt", "made on the first")
        try first.sync(remote)
        // The root's copy went up last (blocks keep their local times, the root goes by rcat).
        func modified(_ name: String) throws -> Date {
            try #require(try FileManager.default.attributesOfItem(atPath: remote.path + "/" + name)[.modificationDate] as? Date)
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: remote.path)
        let copy = try #require(try names.max { try modified($0) < modified($1) })
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: remote.path + "/" + copy))
        try handle.truncate(atOffset: 65_536)
        try handle.close()

        try first.sync(remote, mounted: mounted)
        for name in try FileManager.default.contentsOfDirectory(atPath: remote.path) {
            let size = try FileManager.default.attributesOfItem(atPath: remote.path + "/" + name)[.size] as? Int
            #expect(size == Format.fileSize, "\(name) on the remote: \(size ?? -1) bytes")
        }
        try second.sync(remote)
        #expect(try second.read("from-first.txt") == "made on the first")
        #expect(try second.tree() == first.tree())
    }

    /// A mounted vault's round (`MountedSynchronizer`) whose root loses the race with another
    /// device's sync, which goes up between the round's commit and its root: the round runs
    /// again, merges with that root, and neither device's change is lost.
    @Test func aMountRoundThatLosesARaceRunsAgainAndLosesNothing() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try first.write("from-first.txt", "made on the first")
        try second.write("from-second.txt", "made on the second")

        let round = MountedSynchronizer(vault: first.vault, remote: try SyncDevice.remoteStorage(remote), storageFolder: first.folder,
                                        deviceName: first.name)
        var commits = 0
        let summary = try round.run(holdingRequests: { commit in
            commits += 1
            let committed = try commit()
            if commits == 1 { try second.sync(remote) }
            return committed
        })
        #expect(commits == 2, "the round ran again once")
        #expect(summary.filesDown > 0 && summary.conflicts == 0, "\(summary.line)")
        try first.reopen()
        try second.sync(remote)
        let expected: [String: String] = [
            "docs/": "", "docs/plan.txt": "plan v1", "notes.txt": "notes v1",
            "from-first.txt": "made on the first", "from-second.txt": "made on the second",
        ]
        #expect(try first.tree() == expected)
        #expect(try second.tree() == expected)
    }
}
