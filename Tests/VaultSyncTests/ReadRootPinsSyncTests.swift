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

    /// The desktop published a change after the laptop's delete: the laptop's next sync merges
    /// it, and its result is the remote root (nothing goes up, SYNC-DESIGN §3.3). Its commit
    /// records the own files of that root as its pins, and those of the root the delete's sync
    /// read (x's) go with it: released, free from the next commit, as an open after the commit
    /// has them. `mounted`: a mount's round; both on the vault kept open, as a mount keeps it
    /// (x's files stayed pinned there until its next publish before).
    @Test(arguments: [false, true])
    func aMergeThatEndsAtTheRemoteRootKeepsOnlyThePinsItRecorded(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (laptop, desktop, _, xFiles) = try KeptOverDeleteSyncTests.bothHoldX(remote, seed: 0x44, mounted: false)
        defer { laptop.finish(); desktop.finish() }
        let files = Set(xFiles.values)
        try laptop.vault.remove(Array("x.bin".utf8), from: Vault.rootID)
        try laptop.vault.commit()
        try laptop.sync(remote)
        try desktop.write("desk.txt", "from the desktop")
        try desktop.sync(remote)
        func places() -> Set<String> { IndexThreeAllocationTests.places(laptop, files) }
        func state() -> (pinned: Set<UInt64>, generation: UInt64) {
            laptop.vault.state.withLock { ($0.writer.allocator.pinnedNumbers, $0.committer.generation) }
        }
        #expect(places() == ["pinned"], "the root the delete's sync read references them")

        let before = state().generation
        let merged = try laptop.syncKeepingOpen(remote, mounted: mounted)
        #expect(merged.filesUp == 0 && merged.filesDown > 0, "the desktop's change comes down, nothing goes up: \(merged.line)")
        #expect(try laptop.read("desk.txt") == "from the desktop")
        let kept = state()
        #expect(kept.generation == before + 1, "the merge's commit, none of its own for the pins")
        let recorded = laptop.vault.state.withLock { $0.syncBases.recordedPins }
        #expect(kept.pinned == recorded, "the pins the commit recorded, which an open reads, and no other")
        #expect(places() == ["released"], "released by the merge's commit, which recorded the root it read")
        try laptop.makeFolder("after-merge")
        #expect(places() == ["free"], "free from the next commit")

        let y = try KeptOverDeleteSyncTests.writeOverFreeFiles(laptop, seed: 0x45, reaching: files)
        #expect(!Set(try KeptOverDeleteSyncTests.chunkFiles(laptop, "y.bin").values).isDisjoint(with: files), "y.bin reuses x's files")
        try laptop.syncKeepingOpen(remote, mounted: mounted)
        try laptop.reopen()
        try desktop.sync(remote)
        for device in [laptop, desktop] {
            #expect(try KeptOverDeleteSyncTests.contents(device, "y.bin") == y, "\(device.name): y holds its own bytes")
            #expect(try device.read("desk.txt") == "from the desktop", "\(device.name)")
            #expect(try device.tree()["x.bin"] == nil, "\(device.name)")
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.damagedItems) \(report.storageProblems)")
        }
    }
}
