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

    @Test(arguments: [false, true])
    func whatTheWithdrawnPersonWroteBeforeTheOwnersSyncNeverComesIn(mounted: Bool) throws {
        let remote = try TestRemote(.webdav)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let a = try SyncDevice("alice", seed: 0xA1), b = try SyncDevice("bob", seed: 0xB2)
        defer { a.finish(); b.finish() }
        let codeB = try b.vault.contactCode().code
        try b.reopen()
        try a.write("keep.txt", "alice's, untouched")
        try a.write("edit.txt", "alice's version")
        try a.write("gone.txt", "alice's, which bob deletes")
        try a.write("laptop-edit.txt", "before the laptop's edit")
        let codeA = try a.vault.contactCode().code
        try a.vault.share(with: codeB)
        try a.reopen()
        try a.sync(remote)
        let laptop = try SyncDevice("alice-laptop", seed: 0xA1)
        defer { laptop.finish() }
        try laptop.sync(remote)
        let sharedB = try SyncDevice("bob", sharedWith: b, by: codeA)
        try sharedB.sync(remote)
        #expect(try sharedB.read("edit.txt") == "alice's version")

        try a.vault.unshare(with: codeB)
        try a.reopen()
        // A's laptop, not knowing either, writes and syncs in the window: that comes in.
        try laptop.write("from-laptop.txt", "the laptop's, after the unshare")
        try laptop.write("laptop-edit.txt", "the laptop's edit")
        try laptop.sync(remote)
        // B writes, makes and deletes, and syncs over the laptop's root (B's takes it in).
        try sharedB.write("edit.txt", "bob's change after the unshare")
        try sharedB.write("from-bob.txt", "bob's, after the unshare")
        try sharedB.makeFolder("bob-folder")
        try sharedB.write("bob-folder/inside.txt", "bob's folder")
        try sharedB.vault.remove(Array("gone.txt".utf8), from: Vault.rootID)
        try sharedB.vault.commit()
        try sharedB.sync(remote)
        let bobsView = try sharedB.tree()
        #expect(bobsView["from-laptop.txt"] == "the laptop's, after the unshare" && bobsView["gone.txt"] == nil)

        try a.sync(remote, mounted: mounted)
        let expected = ["keep.txt": "alice's, untouched", "edit.txt": "alice's version", "gone.txt": "alice's, which bob deletes",
                        "laptop-edit.txt": "the laptop's edit", "from-laptop.txt": "the laptop's, after the unshare"]
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
}
