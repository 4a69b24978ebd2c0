import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
@testable import VaultSync

/// One device of the owner withdraws a grant that the owner's other device made, and syncs
/// first (FORMAT.md §14.8, "Sync after a withdrawal", step 1): the withdrawal sealed every grant
/// again in its storage, the other device's too, and its sync must put those up, never the
/// remote's old ones. The desktop shares with X and Y and syncs; the laptop joins by sync, X
/// and Y join; the laptop withdraws Y, writes and syncs. Y is told that access ended and never
/// reads what is written after, on either device; X reads everything. Real vaults on disk, a
/// real rclone, a folder remote.
@Suite(.serialized) struct OwnerWithdrawsOthersGrantTests {
    typealias Shared = SharedSyncTests

    static let before = ["hello.txt": "hello from alice"]

    /// `laptopSyncedLast`: the laptop synced once more after the grantees joined, so that its
    /// withdrawing sync has nothing to merge; else it merges the grantees' joins.
    @Test(arguments: [false, true])
    func theWithdrawnGranteeIsToldAndReadsNothingAfter(laptopSyncedLast: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let (desktop, laptop, x, y, sharedX, sharedY, _, codeY) = try OwnerFollowCutTests.Run.sharedOnTwoDevices(remote)
        defer { for device in [desktop, laptop, x, y] { device.finish() } }
        if laptopSyncedLast { try laptop.sync(remote) }

        try laptop.vault.unshare(with: codeY)
        try laptop.reopen()
        try laptop.write("after.txt", "after yvonne")
        try laptop.sync(remote)
        try Self.checkEnded(sharedY, remote, "after the laptop's sync")

        // X follows the new keys and reads on; the desktop follows and writes; X reads that too.
        try sharedX.sync(remote)
        #expect(try sharedX.read("after.txt") == "after yvonne", "X follows")
        try desktop.sync(remote)
        #expect(try desktop.read("after.txt") == "after yvonne", "the desktop follows")
        try desktop.write("later.txt", "from the desktop, later")
        try desktop.sync(remote)
        try sharedX.sync(remote)
        try laptop.sync(remote)
        let all = Self.before.merging(["after.txt": "after yvonne", "later.txt": "from the desktop, later"]) { a, _ in a }
        for device in [desktop, laptop, sharedX] { #expect(try device.tree() == all, "\(device.name)") }
        try Self.checkEnded(sharedY, remote, "after the desktop wrote")
        for device in [desktop, laptop] {
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.storageProblems) \(report.damagedItems)")
            #expect(try Shared.files(device.folder).count % Format.groupSize == 0, "\(device.name)")
        }
        #expect(try Shared.files(served).count % Format.groupSize == 0)
    }

    /// Y's sync says in one line that access ended, and changes nothing, in Y's storage or on
    /// the remote; Y's tree is what it was before the withdrawal.
    static func checkEnded(_ sharedY: SyncDevice, _ remote: TestRemote, _ when: String) throws {
        let served = try #require(remote.servedFolder)
        let storage = try Shared.files(sharedY.folder), remoteNow = try Shared.files(served)
        #expect(Shared.refusal { try sharedY.sync(remote) } == SharingError.accessEnded.description, "\(when)")
        #expect(try Shared.files(sharedY.folder) == storage, "\(when): nothing changed in Y's storage")
        #expect(try Shared.files(served) == remoteNow, "\(when): nothing changed on the remote")
        #expect(try sharedY.tree() == before, "\(when): Y never read what came after")
    }

    /// The desktop shares with Z and syncs after the laptop's last sync; the laptop withdraws Y:
    /// the laptop's sync cannot seal Z's grant to its new keys, so it is refused in one line that
    /// says what to do, changing nothing on either side; doing that ends Y's grant, and X and Z
    /// read on.
    @Test func aWithdrawalAfterAShareOnTheOtherDeviceIsRefused() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let (desktop, laptop, x, y, sharedX, sharedY, _, codeY) = try OwnerFollowCutTests.Run.sharedOnTwoDevices(remote)
        let z = try SyncDevice("zoe", seed: 0xD4)
        defer { for device in [desktop, laptop, x, y, z] { device.finish() } }
        let codeZ = try z.vault.contactCode().code, codeA = try desktop.vault.contactCode().code
        try z.vault.lock()
        try desktop.vault.share(with: codeZ)
        try desktop.reopen()
        try desktop.sync(remote)
        let sharedZ = try SyncDevice("zoe", sharedWith: z, by: codeA)
        try sharedZ.sync(remote)

        try laptop.vault.unshare(with: codeY)
        try laptop.reopen()
        try laptop.write("after.txt", "after yvonne")
        let tree = try laptop.tree(), storage = try Shared.files(laptop.folder), remoteBefore = try Shared.files(served)
        let line = Shared.refusal { try laptop.sync(remote) }
        #expect(line == SyncRefusal.withdrawnAfterShareElsewhere.description)
        #expect(!line.contains("\n") && line.contains("unshare") && line.contains("nothing was changed"))
        #expect(try Shared.files(laptop.folder) == storage, "nothing changed in the laptop's storage")
        #expect(try Shared.files(served) == remoteBefore, "nothing changed on the remote")
        try laptop.reopen()
        #expect(try laptop.tree() == tree)
        let report = try laptop.vault.check()
        #expect(report.isClean, "\(report.storageProblems) \(report.damagedItems)")

        // What the line says: a new storage that syncs, what the laptop changed copied in, the
        // withdrawal made again there.
        let fresh = try SyncDevice("alice-again", seed: 0xA1)
        defer { fresh.finish() }
        try fresh.sync(remote)
        try fresh.write("after.txt", try laptop.read("after.txt"))
        try fresh.vault.unshare(with: codeY)
        try fresh.reopen()
        try fresh.sync(remote)
        try Self.checkEnded(sharedY, remote, "after the withdrawal made again")
        for grantee in [sharedX, sharedZ] {
            try grantee.sync(remote)
            #expect(try grantee.read("after.txt") == "after yvonne", "\(grantee.name) reads on")
        }
        try desktop.sync(remote)
        #expect(try desktop.read("after.txt") == "after yvonne", "the desktop follows")
    }
}
