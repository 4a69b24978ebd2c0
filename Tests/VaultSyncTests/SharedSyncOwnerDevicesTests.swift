import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
@testable import VaultSync

/// The sharer's devices share as one identity (issue 14, FORMAT.md §13.11, §14.9): the remote's
/// unlock record carries the owner's identity and recipients, so that A's second device, which
/// joined by `sync`, gives A's contact code, shares and withdraws as A, and A's first device
/// follows a withdrawal made on the second. Real vaults on disk, a real rclone, a local remote.
@Suite(.serialized) struct SharedSyncOwnerDevicesTests {
    typealias Shared = SharedSyncTests

    @Test func aSecondDeviceOfTheSharerSharesAndWithdrawsAsTheSharer() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let trio = try SharingTrio()
        defer { trio.finish() }
        let (a, b, c, codeA, codeB, codeC) = (trio.a, trio.b, trio.c, trio.codeA, trio.codeB, trio.codeC)
        try a.sync(remote)

        // A's laptop joins by sync: the identity came with the remote's record, and stays.
        let laptop = try SyncDevice("alice-laptop", seed: 0xA1)
        defer { laptop.finish() }
        try laptop.sync(remote)
        #expect(try laptop.vault.contactCode().code == codeA)
        try laptop.reopen()
        #expect(try laptop.vault.contactCode().code == codeA, "the identity is in the laptop's own record")

        // The laptop shares with B and C; both open what A's code shared with them.
        try laptop.vault.share(with: codeB)
        try laptop.vault.share(with: codeC)
        try laptop.reopen()
        try laptop.sync(remote)
        let sharedB = try SyncDevice("bob", sharedWith: b, by: codeA), sharedC = try SyncDevice("carol", sharedWith: c, by: codeA)
        try sharedB.sync(remote)
        try sharedC.sync(remote)
        #expect(try sharedB.read("hello.txt") == "hello from alice")
        #expect(try sharedC.read("hello.txt") == "hello from alice")

        // A's first device learns the recipients from the remote's record: it could withdraw too.
        try a.sync(remote)

        // The laptop withdraws C's grant and writes; its sync moves the remote to the new keys.
        try laptop.vault.unshare(with: codeC)
        try laptop.reopen()
        try laptop.write("later.txt", "after carol")
        try laptop.sync(remote)
        try sharedB.sync(remote)
        #expect(try sharedB.read("later.txt") == "after carol", "B follows and still opens")
        #expect(Shared.refusal { try sharedC.sync(remote) } == SharingError.accessEnded.description)

        // A's first device follows the withdrawal made on the laptop, and writes on.
        try a.sync(remote)
        #expect(try a.read("later.txt") == "after carol")
        try a.reopen()
        #expect(try a.vault.contactCode().code == codeA)
        try a.write("desktop.txt", "from the desktop")
        try a.sync(remote)
        try sharedB.write("bob.txt", "from bob")
        try sharedB.sync(remote)
        try a.sync(remote)
        try laptop.sync(remote)
        let expected = ["hello.txt": "hello from alice", "later.txt": "after carol", "desktop.txt": "from the desktop", "bob.txt": "from bob"]
        #expect(try a.tree() == expected)
        #expect(try laptop.tree() == expected)
        #expect(try sharedB.tree() == expected)
        for device in [a, laptop] {
            let report = try device.vault.check()
            #expect(report.storageProblems.isEmpty && report.damagedItems.isEmpty, "\(device.name): \(report.storageProblems)")
            #expect(try Shared.files(device.folder).count % Format.groupSize == 0, "\(device.name)")
        }
        #expect(try Shared.files(remote.servedFolder!).count % Format.groupSize == 0)
        try sharedB.vault.lock()
    }
}
