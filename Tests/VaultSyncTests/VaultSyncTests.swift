import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
@testable import VaultSync

/// The vault-level sync (docs/SYNC-DESIGN.md §3.4, FORMAT.md §13.11) with real vaults on disk,
/// a real rclone, and remotes started by the test: two devices, offline edits on both, merges,
/// conflicts, and the files each sync moves.
@Suite(.serialized) struct VaultSyncTests {
    /// A first device that made the vault and published it, and a second that brought it down.
    static func twoDevices(_ remote: TestRemote) throws -> (SyncDevice, SyncDevice) {
        let first = try SyncDevice("laptop")
        try first.makeFolder("docs")
        try first.write("docs/plan.txt", "plan v1")
        try first.write("notes.txt", "notes v1")
        let up = try first.sync(remote)
        #expect(up.filesDown == 0 && up.filesUp > 0)
        let second = try SyncDevice("desktop")
        let down = try second.sync(remote)
        #expect(down.filesDown > 0)
        #expect(try second.tree() == first.tree(), "the second device brings the whole vault down")
        return (first, second)
    }

    /// Against every kind of remote: a folder, `rclone serve webdav`, `rclone serve sftp`, moto's S3.
    @Test(arguments: TestRemote.Kind.allCases)
    func offlineEditsOnBothDevicesMergeInEitherOrder(kind: TestRemote.Kind) throws {
        let remote = try TestRemote(kind)
        defer { remote.finish() }
        let (first, second) = try Self.twoDevices(remote)
        defer { first.finish(); second.finish() }

        try first.write("from-first.txt", "made on the first")
        try first.rename("docs/plan.txt", to: "plan-renamed.txt")
        try second.write("from-second.txt", "made on the second")
        try second.write("notes.txt", "notes v2 from the second")
        try second.makeFolder("photos")

        try second.sync(remote)
        let merged = try first.sync(remote)
        #expect(merged.conflicts == 0)
        try second.sync(remote)
        let expected: [String: String] = [
            "docs/": "", "docs/plan-renamed.txt": "plan v1", "notes.txt": "notes v2 from the second",
            "from-first.txt": "made on the first", "from-second.txt": "made on the second", "photos/": "",
        ]
        #expect(try first.tree() == expected)
        #expect(try second.tree() == expected)

        // The other order: the first device syncs first this time.
        try first.write("notes.txt", "notes v3 from the first")
        try second.write("docs/another.txt", "another")
        try first.sync(remote)
        try second.sync(remote)
        try first.sync(remote)
        #expect(try first.tree() == second.tree())
        #expect(try first.read("notes.txt") == "notes v3 from the first")
        #expect(try first.read("docs/another.txt") == "another")
        try Self.checkWholeGroups(first, second, remote)
    }

    @Test(arguments: TestRemote.Kind.allCases)
    func aFileChangedOnBothSidesKeepsBoth(kind: TestRemote.Kind) throws {
        let remote = try TestRemote(kind)
        defer { remote.finish() }
        let (first, second) = try Self.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try first.write("notes.txt", "the first's version")
        try second.write("notes.txt", "the second's version")
        try first.sync(remote)
        let summary = try second.sync(remote)
        #expect(summary.conflicts == 1, "\(summary.actions)")
        try first.sync(remote)
        try Self.expectBothVersionsKept(first, second)
    }

    /// After both synced: "notes.txt" holds the first device's version on each, and one conflict
    /// copy the second's ("desktop" in its name).
    static func expectBothVersionsKept(_ first: SyncDevice, _ second: SyncDevice,
                                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        for device in [first, second] {
            let tree = try device.tree()
            #expect(tree["notes.txt"] == "the first's version", "the remote's version keeps the name", sourceLocation: sourceLocation)
            let copies = tree.filter { $0.key.hasPrefix("notes.conflict-desktop-") && $0.key.hasSuffix(".txt") }
            #expect(copies.count == 1 && copies.first?.value == "the second's version", "\(tree.keys.sorted())",
                    sourceLocation: sourceLocation)
        }
    }

    @Test func aOneByteChangeMovesOneChunkAndItsPageAndANoOpMovesNothing() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let device = try SyncDevice("laptop")
        defer { device.finish() }
        try device.write("big.bin", "")
        try device.write("big.bin", bytes: (0..<(4 * Vault.Limits.payloadSize)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try device.sync(remote)

        let nothing = try device.sync(remote)
        #expect(nothing == SyncSummary(), "a sync with nothing to do moves nothing: \(nothing.line)")

        try device.write("big.bin", bytes: [0xAB], at: UInt64(2 * Vault.Limits.payloadSize + 5))
        let change = try device.sync(remote)
        // One chunk, the one index page of this small vault, the remote root and its copy, and
        // a new group whole if the chunk needed one.
        #expect(change.blocksUp == 1 && change.pagesUp == 1 && change.filesDown == 0 && change.filesRemoved == 0, "\(change.line)")
        #expect(change.filesUp == 4 + change.groupFilesUp, "\(change.line)")
        #expect(change.groupFilesUp == 0 || change.groupFilesUp >= 14, "only a group made for the new chunk goes up whole")
        #expect(try device.sync(remote) == SyncSummary())
    }

    /// Two idle devices syncing in turn: once each holds the other's state, a sync moves nothing
    /// (SYNC-DESIGN §3.3), not even the two root slots, and a change still goes across.
    @Test(arguments: [false, true])
    func idleDevicesSyncingInTurnMoveNothing(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try Self.twoDevices(remote)
        defer { first.finish(); second.finish() }
        // The first device takes in the second's entry: a merge of nothing to send back.
        let learnt = try first.sync(remote, mounted: mounted)
        #expect(learnt.filesUp == 0, "\(learnt.line)")
        for round in 1...2 {
            for device in [second, first] {
                let idle = try device.sync(remote, mounted: mounted)
                #expect(idle == SyncSummary(), "round \(round), \(device.name): \(idle.line)")
            }
        }
        try second.write("late.txt", "late")
        try second.sync(remote, mounted: mounted)
        let pulled = try first.sync(remote, mounted: mounted)
        #expect(pulled.filesUp == 0 && pulled.filesDown > 0, "\(pulled.line)")
        #expect(try first.read("late.txt") == "late")
        #expect(try second.sync(remote, mounted: mounted) == SyncSummary())
        #expect(try first.sync(remote, mounted: mounted) == SyncSummary())
        try Self.checkWholeGroups(first, second, remote)
    }

    @Test func theRemoteAndTheDevicesShareNoIndexName() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try Self.twoDevices(remote)
        defer { first.finish(); second.finish() }
        let remoteNames = Set(try FileManager.default.contentsOfDirectory(atPath: remote.servedFolder!))
        let remoteIndex = try [first.vault.remoteUnlockName()] + first.vault.openRemote(unlockFile: nil).slotNames()
        #expect(try remoteIndex == [second.vault.remoteUnlockName()] + second.vault.openRemote(unlockFile: nil).slotNames())
        #expect(remoteIndex.allSatisfy(remoteNames.contains), "the remote holds its unlock record and both slots")
        for device in [first, second] {
            let local = device.storageNames
            let slots = try [0, 1].map { try device.vault.storageName(ofFile: $0) }
            #expect(slots.allSatisfy { local.contains($0) && !remoteNames.contains($0) })
            #expect(remoteIndex.allSatisfy { !local.contains($0) })
            #expect(!slots.contains { remoteIndex.contains($0) })
        }
        // Every other file of the remote is a file of a device under the same name.
        let devices = first.storageNames.union(second.storageNames)
        #expect(remoteNames.subtracting(devices) == Set(remoteIndex))
    }

    @Test func aSecondDeviceNeedsAVaultSomewhere() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let device = try SyncDevice("lonely")
        defer { device.finish() }
        #expect(throws: SyncRefusal.noVault) { try device.sync(remote) }
        #expect(!FileManager.default.fileExists(atPath: remote.servedFolder!) || device.storageNames.count > 0)
    }

    /// Every storage holds whole groups of 16 (R-SYN-2).
    static func checkWholeGroups(_ first: SyncDevice, _ second: SyncDevice, _ remote: TestRemote) throws {
        for device in [first, second] { #expect(device.storageNames.count % 16 == 0, "\(device.name): \(device.storageNames.count)") }
        if let served = remote.servedFolder {
            let count = try FileManager.default.contentsOfDirectory(atPath: served).count
            #expect(count % 16 == 0, "remote: \(count) files")
        }
    }
}
