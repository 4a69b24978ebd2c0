import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
@testable import VaultSync

/// Sync after a withdrawal (issue 14, FORMAT.md §14.8) with real vaults on disk, a real rclone
/// and a WebDAV server on 127.0.0.1: A shares with B and C, whose devices join by `sync
/// --shared`; A withdraws B and syncs, cut short at each change of the remote; C's device
/// follows the vault to its new keys whatever state the remote was left in; B's sync says that
/// access ended and changes nothing, in B's storage or on the remote.
@Suite(.serialized) struct SharedSyncUnshareTests {
    typealias Shared = SharedSyncTests

    /// A with a file, shared with B and C, synced; B and C joined by their first sync. `owner`:
    /// A's device, when the test made it (else a new vault).
    static func sharedWithTwo(_ remote: TestRemote, owner: SyncDevice? = nil)
        throws -> (a: SyncDevice, b: SyncDevice, c: SyncDevice, sharedB: SyncDevice, sharedC: SyncDevice, codeA: ContactCode, codeB: ContactCode) {
        let trio = try SharingTrio(owner: owner)
        let (a, b, c, codeA, codeB, codeC) = (trio.a, trio.b, trio.c, trio.codeA, trio.codeB, trio.codeC)
        try a.vault.share(with: codeB)
        try a.vault.share(with: codeC)
        try a.reopen()
        try a.sync(remote)
        let sharedB = try SyncDevice("bob", sharedWith: b, by: codeA), sharedC = try SyncDevice("carol", sharedWith: c, by: codeA)
        try sharedB.sync(remote)
        try sharedC.sync(remote)
        return (a, b, c, sharedB, sharedC, codeA, codeB)
    }

    /// A's sync cut after its root under the new keys went up: C, not following yet, writes at
    /// the old keys' slots, and once the grants are up, follows and writes at the new ones; A's
    /// next sync reads the remote where it now is and merges C's changes, never writing over them
    /// (before, it read the old keys' root and C then saw "restored or rolled back?").
    @Test func theRemoteMovesCFollowsAndBIsToldWhateverTheCut() throws {
        try Self.remoteMovesCFollowsAndBIsTold()
    }

    static func remoteMovesCFollowsAndBIsTold() throws {
        let remote = try TestRemote(.webdav)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let (a, b, c, sharedB, sharedC, _, codeB) = try Self.sharedWithTwo(remote)
        defer { a.finish(); b.finish(); c.finish() }
        try sharedC.write("from-carol.txt", "carol before")
        try sharedC.sync(remote)
        try sharedB.write("from-bob.txt", "bob's, not synced yet")

        try a.vault.unshare(with: codeB)
        try a.write("later.txt", "after bob")
        // A's sync cut at each change of the remote's move; C syncs in between and follows as
        // soon as its grant on the remote names the new keys.
        let stops = ["grants", "record", "retire", "forget rotation"]
        for stop in stops {
            #expect(throws: SyncDevice.Stop.self, "\(stop)") { try a.sync(remote, stoppingAt: stop) }
            try sharedC.write("carol-\(stop).txt", "carol after the cut at \(stop)")
            try sharedC.sync(remote)
            #expect(try sharedC.read("hello.txt") == "hello from alice", "\(stop)")
        }
        try a.sync(remote)
        try sharedC.sync(remote)
        try sharedC.write("carol-after.txt", "carol after")
        try sharedC.sync(remote)
        try a.sync(remote)
        var expected = ["hello.txt": "hello from alice", "from-carol.txt": "carol before", "later.txt": "after bob",
                        "carol-after.txt": "carol after"]
        for stop in stops { expected["carol-\(stop).txt"] = "carol after the cut at \(stop)" }
        #expect(try a.tree() == expected)
        #expect(try sharedC.tree() == expected)
        let again = try a.sync(remote)
        #expect(again.filesUp == 0 && again.filesDown == 0 && again.filesRemoved == 0, "nothing left to move: \(again)")
        let report = try sharedC.vault.check()
        #expect(report.storageProblems.isEmpty && report.damagedItems.isEmpty, "\(report.storageProblems)")
        #expect(try Shared.files(c.folder).count % Format.groupSize == 0)
        #expect(try Shared.files(served).count % Format.groupSize == 0)

        // B: one line, nothing changed in B's storage or on the remote, B's own write still there.
        let storageB = try Shared.files(b.folder), remoteNow = try Shared.files(served)
        #expect(Shared.refusal { try sharedB.sync(remote) } == SharingError.accessEnded.description)
        #expect(try Shared.files(b.folder) == storageB && Shared.files(served) == remoteNow)
        try sharedB.reopen()
        #expect(try sharedB.tree() == ["hello.txt": "hello from alice", "from-bob.txt": "bob's, not synced yet"])
        try sharedB.vault.lock()
    }

    /// A storage that holds the shared vault as another device's storage left it (`cp -a`):
    /// `sync --shared` refuses it before anything changes, here or on the remote.
    @Test func aCopiedStorageIsRefused() throws {
        let remote = try TestRemote(.webdav)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let (a, b, c, sharedB, sharedC, codeA, _) = try Self.sharedWithTwo(remote)
        defer { a.finish(); b.finish(); c.finish() }
        try sharedB.vault.lock()
        try sharedC.vault.lock()

        // B's storage made again from A's (the sharer's device) and from C's (another grantee's).
        for source in [a, c] {
            let copy = try SyncDevice("bob-copy", seed: 0xB2)
            defer { copy.finish() }
            try copy.vault.lock()
            let manager = FileManager.default
            for name in try manager.contentsOfDirectory(atPath: copy.folder) { try manager.removeItem(atPath: copy.folder + "/" + name) }
            for name in try manager.contentsOfDirectory(atPath: source.folder) {
                try manager.copyItem(atPath: source.folder + "/" + name, toPath: copy.folder + "/" + name)
            }
            for name in try manager.contentsOfDirectory(atPath: b.folder) where !manager.fileExists(atPath: copy.folder + "/" + name) {
                try manager.copyItem(atPath: b.folder + "/" + name, toPath: copy.folder + "/" + name)
            }
            let before = try Shared.files(copy.folder), remoteBefore = try Shared.files(served)
            let shared = try SyncDevice("bob", sharedWith: copy, by: codeA)
            #expect(Shared.refusal { try shared.sync(remote) } == SharingError.copiedStorage.description, "\(source.name)")
            try shared.vault.lock()
            #expect(try Shared.files(copy.folder) == before && Shared.files(served) == remoteBefore, "\(source.name)")
        }
        // B's own storage, filled by B's sync, still syncs.
        let own = try SyncDevice("bob", sharedWith: b, by: codeA)
        try own.sync(remote)
        #expect(try own.read("hello.txt") == "hello from alice")
        try own.vault.lock()
    }
}
