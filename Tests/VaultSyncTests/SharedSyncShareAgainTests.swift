import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
@testable import VaultSync

/// A grantee that keeps syncing after its grant ended, then is shared with again (FORMAT.md
/// §14.8, "Sync after a withdrawal", item 4; ADVERSARIES.md, the revoked friend), with real
/// vaults on disk, a real rclone and a folder remote: A shares with B and C, whose devices join;
/// A withdraws B, writes and syncs. B's syncs, again and again, say that access ended, change
/// nothing in B's storage or on the remote, and bring B nothing written since (B's own unsynced
/// write stays in B's storage). A shares with B again (the ended grant's file takes the grant,
/// §14.7), writes and syncs: the remote holds the grant at the same name, B's device follows to
/// the new keys and reads everything, and C's device downloads the grant whose role changed.
@Suite(.serialized) struct SharedSyncShareAgainTests {
    typealias Shared = SharedSyncTests

    @Test func aGranteeSyncsOnAfterItsGrantEndedAndIsSharedWithAgain() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let trio = try SharingTrio()
        defer { trio.finish() }
        let (a, b, c, codeA, codeB, codeC) = (trio.a, trio.b, trio.c, trio.codeA, trio.codeB, trio.codeC)
        let namesBefore = a.storageNames
        try a.vault.share(with: codeB)
        let grantB = try #require(a.storageNames.subtracting(namesBefore).first, "B's grant is a new name in A's storage")
        try a.vault.share(with: codeC)
        try a.reopen()
        try a.sync(remote)
        let sharedB = try SyncDevice("bob", sharedWith: b, by: codeA), sharedC = try SyncDevice("carol", sharedWith: c, by: codeA)
        try sharedB.sync(remote)
        try sharedC.sync(remote)
        let grantOfB = try #require(FileManager.default.contents(atPath: b.folder + "/" + grantB), "B holds its grant")
        try sharedB.write("from-bob.txt", "bob's, not synced")

        try a.vault.unshare(with: codeB)
        try a.reopen()
        try a.write("later.txt", "after bob")
        try a.sync(remote)
        let ended = try #require(FileManager.default.contents(atPath: served + "/" + grantB), "the ended grant is on the remote at the grant's name")
        #expect(ended != grantOfB, "the remote's grant of B was sealed again as ended")

        // B syncs on, twice: one line each time, nothing changed here or there, and B's vault
        // holds what it held (its own write, nothing of A's after the withdrawal).
        for attempt in 1...2 {
            let storageB = try Shared.files(b.folder), remoteNow = try Shared.files(served)
            let line = Shared.refusal { try sharedB.sync(remote) }
            #expect(line == SharingError.accessEnded.description, "attempt \(attempt)")
            #expect(line.hasPrefix("access to the vault shared by that contact code ended: its owner withdrew it"), "attempt \(attempt): \(line)")
            #expect(try Shared.files(b.folder) == storageB && Shared.files(served) == remoteNow, "attempt \(attempt): nothing changed")
            try sharedB.reopen()
            #expect(try sharedB.tree() == ["hello.txt": "hello from alice", "from-bob.txt": "bob's, not synced"], "attempt \(attempt)")
        }
        #expect(FileManager.default.contents(atPath: b.folder + "/" + grantB) == grantOfB, "B's grant is the one B had")

        // A shares with B again: the same name, now a grant of the new keys.
        try a.vault.share(with: codeB)
        try a.reopen()
        try a.write("again.txt", "bob is back")
        try a.sync(remote)
        let again = try #require(FileManager.default.contents(atPath: served + "/" + grantB), "the grant is on the remote at its name")
        #expect(again != ended && again == FileManager.default.contents(atPath: a.folder + "/" + grantB), "the remote holds A's new grant")

        try sharedB.sync(remote)
        try sharedC.sync(remote)
        try a.sync(remote)
        try sharedC.sync(remote)
        let all = ["hello.txt": "hello from alice", "later.txt": "after bob", "again.txt": "bob is back", "from-bob.txt": "bob's, not synced"]
        #expect(try sharedB.tree() == all, "B follows to the new keys and reads what is there now")
        #expect(try a.tree() == all && sharedC.tree() == all)
        #expect(FileManager.default.contents(atPath: b.folder + "/" + grantB) == again, "B's device took the grant as the remote holds it")
        #expect(FileManager.default.contents(atPath: c.folder + "/" + grantB) == again, "C's device downloaded the grant whose role changed")
        for device in [a, sharedB, sharedC] {
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.storageProblems) \(report.damagedItems)")
        }
        for folder in [a.folder, b.folder, c.folder, served] { #expect(try Shared.files(folder).count % Format.groupSize == 0, "\(folder)") }
        try sharedB.vault.lock()
        try sharedC.vault.lock()
    }
}
