import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
@testable import VaultSync

/// The revoked friend (ADVERSARIES.md) between the owner's `unshare` and the owner's next sync
/// (FORMAT.md §14.8, "Sync after a withdrawal"): B, not yet knowing, edits, makes and deletes
/// files in the shared vault and syncs, while the remote still holds the old keys. A's sync
/// must keep A's state (B's changes never come in), move the remote to it, and still take in
/// what A's other device wrote in that window. Real vaults on disk, a real rclone, a WebDAV
/// server on 127.0.0.1.
@Suite(.serialized) struct WithdrawnWritesSyncTests {
    typealias Shared = SharedSyncTests

    /// A with `files`, shared with B, synced; B's device joined by its first sync.
    static func sharedWithBob(_ remote: TestRemote, files: [String: String])
        throws -> (a: SyncDevice, b: SyncDevice, sharedB: SyncDevice, codeB: ContactCode) {
        let a = try SyncDevice("alice", seed: 0xA1), b = try SyncDevice("bob", seed: 0xB2)
        let codeB = try b.vault.contactCode().code
        try b.reopen()
        for (name, text) in files.sorted(by: { $0.key < $1.key }) { try a.write(name, text) }
        let codeA = try a.vault.contactCode().code
        try a.vault.share(with: codeB)
        try a.reopen()
        try a.sync(remote)
        let sharedB = try SyncDevice("bob", sharedWith: b, by: codeA)
        try sharedB.sync(remote)
        return (a, b, sharedB, codeB)
    }

    /// B, not knowing, edits, makes a folder and a file, and deletes, then syncs.
    static func bobWritesAndSyncs(_ sharedB: SyncDevice, _ remote: TestRemote, suffix: String = "") throws {
        try sharedB.write("edit.txt", "bob's change after the unshare\(suffix)")
        try sharedB.write("from-bob\(suffix).txt", "bob's, after the unshare")
        try sharedB.makeFolder("bob-folder\(suffix)")
        try sharedB.write("bob-folder\(suffix)/inside.txt", "bob's folder")
        try sharedB.vault.remove(Array("gone\(suffix).txt".utf8), from: Vault.rootID)
        try sharedB.vault.commit()
        try sharedB.sync(remote)
    }

    @Test(arguments: [false, true])
    func whatTheWithdrawnPersonWroteBeforeTheOwnersSyncNeverComesIn(mounted: Bool) throws {
        let remote = try TestRemote(.webdav)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let (a, b, sharedB, codeB) = try Self.sharedWithBob(remote, files: [
            "keep.txt": "alice's, untouched", "edit.txt": "alice's version", "gone.txt": "alice's, which bob deletes",
            "laptop-edit.txt": "before the laptop's edit", "laptop-gone.txt": "the laptop deletes it",
        ])
        defer { a.finish(); b.finish() }
        let laptop = try SyncDevice("alice-laptop", seed: 0xA1)
        defer { laptop.finish() }
        try laptop.sync(remote)
        #expect(try sharedB.read("edit.txt") == "alice's version")

        try a.vault.unshare(with: codeB)
        try a.reopen()
        // A's laptop, not knowing either, writes and syncs in the window: that comes in.
        try laptop.write("from-laptop.txt", "the laptop's, after the unshare")
        try laptop.write("laptop-edit.txt", "the laptop's edit")
        try laptop.vault.remove(Array("laptop-gone.txt".utf8), from: Vault.rootID)
        try laptop.vault.commit()
        try laptop.sync(remote)
        // B's sync goes over the laptop's root (B's takes it in).
        try Self.bobWritesAndSyncs(sharedB, remote)
        let bobsView = try sharedB.tree()
        #expect(bobsView["from-laptop.txt"] == "the laptop's, after the unshare" && bobsView["gone.txt"] == nil)

        try a.sync(remote, mounted: mounted)
        // A deletion names no device: the laptop's comes back with B's (README, "Taking a share back").
        let expected = ["keep.txt": "alice's, untouched", "edit.txt": "alice's version", "gone.txt": "alice's, which bob deletes",
                        "laptop-edit.txt": "the laptop's edit", "from-laptop.txt": "the laptop's, after the unshare",
                        "laptop-gone.txt": "the laptop deletes it"]
        #expect(try a.tree() == expected, "the owner's vault after his sync")
        // The remote is the owner's: his laptop follows to it, B's changes gone there too.
        try laptop.sync(remote)
        #expect(try laptop.tree() == expected, "the owner's other device")
        try a.sync(remote)
        #expect(try a.tree() == expected)
        for device in [a, laptop] {
            let report = try device.vault.check()
            #expect(report.storageProblems.isEmpty && report.damagedItems.isEmpty, "\(device.name): \(report.storageProblems)")
            #expect(try Shared.files(device.folder).count % Format.groupSize == 0, "\(device.name)")
        }
        #expect(try Shared.files(served).count % Format.groupSize == 0)

        // B: access ended, one line, nothing changed in B's storage or on the remote.
        let storageB = try Shared.files(b.folder), remoteNow = try Shared.files(served)
        #expect(Shared.refusal { try sharedB.sync(remote) } == SharingError.accessEnded.description)
        #expect(try Shared.files(b.folder) == storageB && Shared.files(served) == remoteNow)
        try sharedB.reopen()
        #expect(try sharedB.tree() == bobsView, "B keeps what B wrote, in B's storage only")
        try sharedB.vault.lock()
    }

    /// A's sync cut before anything went up, and cut after its root went up at the new keys
    /// (the grants not yet): B, still at the old keys, writes and syncs again; A's next sync
    /// keeps A's state all the same.
    @Test(arguments: ["upload", "grants"])
    func anOwnersSyncCutShortAndRunAgainStillLeavesItOut(stop: String) throws {
        let remote = try TestRemote(.webdav)
        defer { remote.finish() }
        let files = ["keep.txt": "alice's", "edit.txt": "alice's version", "gone.txt": "alice's, which bob deletes",
                     "gone-2.txt": "alice's, which bob deletes after the cut"]
        let (a, b, sharedB, codeB) = try Self.sharedWithBob(remote, files: files)
        defer { a.finish(); b.finish() }
        try a.vault.unshare(with: codeB)
        try a.reopen()
        try Self.bobWritesAndSyncs(sharedB, remote)
        #expect(throws: SyncDevice.Stop.self) { try a.sync(remote, stoppingAt: stop) }
        try Self.bobWritesAndSyncs(sharedB, remote, suffix: "-2")
        try a.sync(remote)
        #expect(try a.tree() == files, "\(stop)")
        let again = try a.sync(remote)
        #expect(again.filesUp == 0 && again.filesDown == 0, "nothing left to move: \(again)")
        #expect(try a.tree() == files, "\(stop)")
        #expect(Shared.refusal { try sharedB.sync(remote) } == SharingError.accessEnded.description)
        try sharedB.vault.lock()
    }
}
