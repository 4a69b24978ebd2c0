import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// A withdrawal (docs/FORMAT.md §14.8) of an index-3 vault cut short at each storage mutation,
/// then a power loss. The next open finishes or undoes the rotation before it reads the root;
/// a release without index 3 (no `Vault.Options.indexThree`) must refuse the vault as newer
/// before that, writing nothing (§15.1), and one with it finishes the withdrawal, clean.
@Suite struct IndexThreeUnshareCutTests {
    typealias Sharing = VaultSharingTests

    /// VaultUnshareTests.sharedWithTwo with A's vault of index 3.
    static func sharedWithTwo() throws -> (storage: SimulatedStorageFolder, a: ContactCode, b: ContactCode) {
        let storage = try TestVaults.storage()
        let b = try Sharing.code(storage, seed: 2), c = try Sharing.code(storage, seed: 3)
        let a = try TestVaults.open(storage, seed: 1, indexThree: true)
        try a.makeFile("hello", Array("from A".utf8))
        try a.share(with: b)
        try a.share(with: c)
        #expect(a.indexVersion == 3)
        let codeA = try a.contactCode().code
        try a.lock()
        return (storage, codeA, b)
    }

    /// Whether A's record holds a rotation (tag 1024): a withdrawal the next open goes on with.
    static func rotationPending(_ storage: SimulatedStorageFolder) throws -> Bool {
        let record = try #require(try FormatTwoVault.readUnlock(storage: storage, patternSecrets: TestVaults.secrets(1))).record
        return record.optional.contains { $0.tag == UnlockRecord.Tag.rotation }
    }

    @Test func aReleaseWithoutIndexThreeRefusesAHalfDoneWithdrawalAndOneWithItFinishesIt() throws {
        var mutations = 0, pending = 0, finished = 0
        while true {
            let (storage, codeA, codeB) = try Self.sharedWithTwo()
            let a = try TestVaults.open(storage, seed: 1, indexThree: true)
            storage.crash(afterMutations: mutations)
            let done = (try? a.unshare(with: codeB)) != nil
            storage.powerLoss()
            let context = "cut after \(mutations) mutations"
            let rotating = try Self.rotationPending(storage)
            if rotating { pending += 1 }

            let before = storage.snapshot
            do {
                let opened = try TestVaults.open(storage, seed: 1)
                try? opened.lock()
                Issue.record("\(context): opened without index 3")
            } catch {
                #expect("\(error)" == "the vault was made by a newer DotSafe (format version 3); update DotSafe to open it", "\(context)")
            }
            let unchanged = storage.snapshot == before
            #expect(unchanged, "\(context): the refusal wrote nothing (rotation pending: \(rotating))")

            let reopened = try TestVaults.open(storage, seed: 1, indexThree: true)
            #expect(reopened.indexVersion == 3, "\(context)")
            #expect(try reopened.readAll("hello") == Array("from A".utf8), "\(context)")
            try reopened.makeFile("later", [UInt8(mutations & 0xff)])
            try reopened.commit()
            let report = try reopened.check()
            #expect(report.isClean, "\(context): \(report.storageProblems) \(report.damagedItems)")
            try reopened.lock()
            try checkStorageInvariants(storage)
            #expect(try !Self.rotationPending(storage), "\(context): the rotation is finished or undone")
            var options = Vault.Options(cacheBytes: 8 << 20)
            options.indexThree = true
            do {
                let b = try Vault.open(storage: storage, secrets: TestVaults.secrets(2), sharedBy: codeA, options: options, clock: ManualClock())
                // Undone: only a rotation cut before its new root was whole.
                #expect(!done, "\(context): B still opens a withdrawal that returned")
                try b.lock()
            } catch SharingError.accessEnded {
                finished += 1
            }
            if done { break }
            mutations += 1
        }
        #expect(mutations > 6 && pending > 2 && finished > 1, "\(mutations) mutations, \(pending) left a rotation, \(finished) finished")
    }
}
