import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
@testable import VaultSync

/// After a sync that published, the own files of the remote root it read stay pinned: a device
/// that read the same root may still write its root over this one's (docs/SYNC-DESIGN.md §3.2,
/// §3.4 step 7). A later sync reads this device's root back; one with a change releases them at
/// its commit, and one with nothing to send does so at one commit of its own, once: further
/// syncs with nothing to send commit nothing. Until then what the last sync freed is not reused.
@Suite(.serialized) struct ReadRootPinsSyncTests {
    /// The laptop deleted x.bin (three chunks in its files) and synced: the root it read still
    /// references x's files. `mounted`: the syncs after are a mount's rounds.
    @Test(arguments: [false, true])
    func aSyncWithNothingToSendReleasesTheReadRootsPinsOnce(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (laptop, desktop, _, xFiles) = try KeptOverDeleteSyncTests.bothHoldX(remote, seed: 0x41, mounted: false)
        defer { laptop.finish(); desktop.finish() }
        let files = Set(xFiles.values)
        try laptop.vault.remove(Array("x.bin".utf8), from: Vault.rootID)
        try laptop.vault.commit()
        try laptop.sync(remote)
        func pinned() -> Set<UInt64> { laptop.vault.state.withLock { $0.writer.allocator.pinnedNumbers } }
        func generation() -> UInt64 { laptop.vault.state.withLock { $0.committer.generation } }
        #expect(files.isSubset(of: pinned()), "after the sync that published the delete: the root it read references them")

        let published = generation()
        let release = try laptop.sync(remote, mounted: mounted)
        #expect(release == SyncSummary(), "nothing goes up or down: \(release)")
        #expect(pinned().isDisjoint(with: files), "released by the sync that read this device's root back")
        #expect(generation() == published + 1, "at one commit")
        let free = laptop.vault.state.withLock { Set($0.writer.allocator.freeNumbers) }
        #expect(files.isSubset(of: free), "free again")
        for round in 0..<2 {
            #expect(try laptop.sync(remote, mounted: mounted) == SyncSummary())
            #expect(generation() == published + 1, "no commit at a later sync with nothing to send (\(round))")
        }

        let y = try KeptOverDeleteSyncTests.writeOverFreeFiles(laptop, seed: 0x42, reaching: files)
        #expect(!Set(try KeptOverDeleteSyncTests.chunkFiles(laptop, "y.bin").values).isDisjoint(with: files), "y.bin reuses x's files")
        try laptop.sync(remote, mounted: mounted)
        try desktop.sync(remote)
        for device in [laptop, desktop] {
            #expect(try KeptOverDeleteSyncTests.contents(device, "y.bin") == y, "\(device.name): y holds its own bytes")
            #expect(try device.tree()["x.bin"] == nil, "\(device.name)")
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.damagedItems) \(report.storageProblems)")
        }
    }

    /// The remote root read back, but the state changed since (not yet synced): the pins go at
    /// that change's sync, not before (a sync that publishes releases them at its own commit).
    @Test func aSyncThatPublishesMakesNoCommitOfItsOwnForThePins() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (laptop, desktop, _, xFiles) = try KeptOverDeleteSyncTests.bothHoldX(remote, seed: 0x43, mounted: false)
        defer { laptop.finish(); desktop.finish() }
        try laptop.vault.remove(Array("x.bin".utf8), from: Vault.rootID)
        try laptop.vault.commit()
        try laptop.sync(remote)
        try laptop.write("new.txt", "a change to publish")
        let before = laptop.vault.state.withLock { $0.committer.generation }
        try laptop.sync(remote)
        let (pinned, generation) = laptop.vault.state.withLock { ($0.writer.allocator.pinnedNumbers, $0.committer.generation) }
        #expect(pinned.isDisjoint(with: Set(xFiles.values)), "released by the sync's own commits")
        #expect(generation == before + 2, "the sync's commit and the one that confirms its root, as before")
    }
}
