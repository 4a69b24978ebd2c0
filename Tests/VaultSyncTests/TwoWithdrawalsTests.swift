import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
@testable import VaultSync

/// Two devices of the owner that both withdraw a grant before either syncs (FORMAT.md §14.8):
/// the first to sync moves the remote to its new keys; the second's sync is refused in one
/// line that says what to do, and changes nothing, in its storage or on the remote. Doing
/// what it says (a new storage, the withdrawal made again there) ends both grants, also when the
/// first to sync is the laptop, which withdrew a grant the desktop made. Real vaults
/// on disk, a real rclone, a folder remote.
@Suite(.serialized) struct TwoWithdrawalsTests {
    typealias Shared = SharedSyncTests

    /// `laptopFirst`: the laptop's sync comes first, and the desktop's is the one refused.
    @Test(arguments: [false, true])
    func theSecondWithdrawalToSyncIsRefusedAndChangesNothing(laptopFirst: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let (desktop, laptop, x, y, sharedX, sharedY, codeX, codeY) = try OwnerFollowCutTests.Run.sharedOnTwoDevices(remote)
        defer { for device in [desktop, laptop, x, y] { device.finish() } }

        // The desktop withdraws Y, the laptop X; each writes; neither has synced since.
        try desktop.vault.unshare(with: codeY)
        try desktop.reopen()
        try desktop.write("desktop.txt", "from the desktop")
        try laptop.vault.unshare(with: codeX)
        try laptop.reopen()
        try laptop.write("laptop.txt", "from the laptop")

        let (first, second) = laptopFirst ? (laptop, desktop) : (desktop, laptop)
        let withdrawnSecond = laptopFirst ? codeY : codeX
        try first.sync(remote)
        let secondTree = try second.tree(), storage = try Shared.files(second.folder), remoteBefore = try Shared.files(served)
        let line = Shared.refusal { try second.sync(remote) }
        #expect(line == SyncRefusal.withdrawnOnTwoDevices.description)
        #expect(!line.contains("\n") && line.contains("unshare") && line.contains("nothing was changed"))
        #expect(try Shared.files(second.folder) == storage, "nothing changed in the refused device's storage")
        #expect(try Shared.files(served) == remoteBefore, "nothing changed on the remote")
        try second.reopen()
        #expect(try second.tree() == secondTree)
        let report = try second.vault.check()
        #expect(report.isClean, "\(report.storageProblems) \(report.damagedItems)")
        #expect(Shared.refusal { try second.sync(remote) } == SyncRefusal.withdrawnOnTwoDevices.description, "refused again, the same")
        let again = try first.sync(remote)
        #expect(again.filesUp == 0 && again.filesDown == 0 && again.filesRemoved == 0, "the first device syncs on, nothing to move: \(again)")

        // After the refusal: what the grantees see, and what the line says to do.
        func afterTheRefusal() throws {
            // Until then the grant the refused device withdrew holds: its holder follows the first's keys.
            let stillShared = laptopFirst ? sharedY : sharedX, ended = laptopFirst ? sharedX : sharedY
            let firstOwn = laptopFirst ? ("laptop.txt", "from the laptop") : ("desktop.txt", "from the desktop")
            try stillShared.sync(remote)
            #expect(try stillShared.tree() == ["hello.txt": "hello from alice", firstOwn.0: firstOwn.1])
            let stillSees = try stillShared.tree()
            #expect(Shared.refusal { try ended.sync(remote) } == SharingError.accessEnded.description)

            // What the line says: a new storage that syncs, what the refused device changed copied
            // in, the withdrawal made again there.
            let fresh = try SyncDevice("alice-again", seed: 0xA1)
            defer { fresh.finish() }
            try fresh.sync(remote)
            let own = laptopFirst ? ("desktop.txt", "from the desktop") : ("laptop.txt", "from the laptop")
            #expect(try second.read(own.0) == own.1)
            try fresh.write(own.0, own.1)
            try fresh.vault.unshare(with: withdrawnSecond)
            try fresh.reopen()
            try fresh.sync(remote)
            try first.sync(remote)
            let expected = ["hello.txt": "hello from alice", "desktop.txt": "from the desktop", "laptop.txt": "from the laptop"]
            #expect(try first.tree() == expected)
            #expect(try fresh.tree() == expected)
            for shared in [sharedX, sharedY] {
                #expect(Shared.refusal { try shared.sync(remote) } == SharingError.accessEnded.description, "\(shared.name)")
            }
            #expect(try ended.tree() == ["hello.txt": "hello from alice"], "never read what came after")
            #expect(try stillShared.tree() == stillSees, "nothing after the second withdrawal")
            for device in [first, fresh] {
                let report = try device.vault.check()
                #expect(report.isClean, "\(device.name): \(report.storageProblems) \(report.damagedItems)")
            }
        }
        try afterTheRefusal()
    }
}
