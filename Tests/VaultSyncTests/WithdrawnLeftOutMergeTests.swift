import DotSafeTestSupport
import Foundation
import Synchronization
import Testing
import VaultCore
@testable import VaultSync

/// The owner's mount round after a withdrawal whose merge takes a remote item that step 2 could
/// have left out (SYNC-DESIGN §3.6 step 2): what step 2 leaves out is what the merge on the local
/// tree as it is then does not take, and a local change before step 3 that makes the merge take
/// one stops the round as `raced`, to run again. Real vaults on disk, a real rclone, a local
/// remote.
@Suite(.serialized) struct WithdrawnLeftOutMergeTests {

    /// A's laptop renamed a file that A deleted here meanwhile: the merge keeps it (an edit over
    /// a delete), with the remote's payload, which the remote did not change since the base. The
    /// round fetches it and goes through (leaving out what only this side changed since the base
    /// left it out, and every run of the round stopped as `raced`).
    @Test func aFileThisSideDeletedAndTheLaptopRenamedComesBack() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (a, b, sharedB, codeB) = try WithdrawnWritesSyncTests.sharedWithBob(remote, files: ["keep.txt": "alice's", "old.txt": "alice's, renamed"])
        defer { a.finish(); b.finish() }
        let laptop = try SyncDevice("alice-laptop", seed: 0xA1)
        defer { laptop.finish() }
        try laptop.sync(remote)
        try a.vault.unshare(with: codeB)
        try a.reopen()
        try a.vault.remove(Array("old.txt".utf8), from: Vault.rootID)
        try a.vault.commit()
        try laptop.rename("old.txt", to: "new.txt")
        try laptop.sync(remote)

        try a.sync(remote, mounted: true)
        let expected = ["keep.txt": "alice's", "new.txt": "alice's, renamed"]
        #expect(try a.tree() == expected)
        try laptop.sync(remote)
        #expect(try laptop.tree() == expected)
        #expect(SharedSyncTests.refusal { try sharedB.sync(remote) } == SharingError.accessEnded.description)
        try sharedB.vault.lock()
    }

    /// B moved D/x.txt out of D, edited it and deleted D; at step 2 A still has both, so the
    /// merge puts x.txt back in D with A's payload and B's is left out. A deletes D before step 3:
    /// the merge now keeps B's x.txt where B put it (its folder is gone here), so the round stops
    /// as `raced` before changing anything, runs again, fetches it and goes through.
    @Test func aLocalChangeBeforeTheMergeThatTakesALeftOutItemRunsTheRoundAgain() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (a, b, sharedB, codeB) = try WithdrawnWritesSyncTests.sharedWithBob(remote, files: ["keep.txt": "alice's"])
        defer { a.finish(); b.finish() }
        try a.makeFolder("D")
        try a.write("D/x.txt", "alice's x")
        try a.sync(remote)
        try sharedB.sync(remote)
        try a.vault.unshare(with: codeB)
        try a.reopen()
        let folderB = try sharedB.id("D")
        try sharedB.vault.rename(Array("x.txt".utf8), in: folderB, to: Array("x.txt".utf8), in: Vault.rootID)
        try sharedB.write("x.txt", "bob's x, moved out")
        try sharedB.vault.remove(Array("D".utf8), from: Vault.rootID, folder: true)
        try sharedB.vault.commit()
        try sharedB.sync(remote)

        let folderA = try a.id("D")
        let holds = Mutex(0)
        var round = MountedSynchronizer(vault: a.vault, remote: try SyncDevice.remoteStorage(remote), storageFolder: a.folder, deviceName: a.name)
        round.now = { 1_700_000_000 }
        _ = try round.run(holdingRequests: { merge in
            // A request of the file system done just before the round takes its lock.
            if holds.withLock({ $0 += 1; return $0 }) == 1 {
                try a.vault.remove(Array("x.txt".utf8), from: folderA)
                try a.vault.remove(Array("D".utf8), from: Vault.rootID, folder: true)
                try a.vault.commit()
            }
            return try merge()
        })
        try a.reopen()
        #expect(holds.withLock { $0 } == 2, "the first run stopped as raced, the second went through")
        #expect(try a.tree() == ["keep.txt": "alice's", "x.txt": "bob's x, moved out"])
        let report = try a.vault.check()
        #expect(report.storageProblems.isEmpty && report.damagedItems.isEmpty, "\(report.storageProblems)")
        #expect(SharedSyncTests.refusal { try sharedB.sync(remote) } == SharingError.accessEnded.description)
        try sharedB.vault.lock()
    }
}
