import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// docs/FORMAT.md §14.8, issue 14: withdrawing a grant. A (seed 1) shares with B (seed 2) and C
/// (seed 3) in one storage in memory, then withdraws B's grant: the vault gets a new VK and RL,
/// C's grant is sealed again to them, B's becomes an ended grant; a rotation cut short at any
/// storage mutation is finished or undone by the next open.
@Suite struct VaultUnshareTests {
    typealias Sharing = VaultSharingTests

    /// A with a file, shared with B and C.
    static func sharedWithTwo() throws -> (storage: SimulatedStorageFolder, a: ContactCode, b: ContactCode, c: ContactCode) {
        let storage = try TestVaults.storage()
        let b = try Sharing.code(storage, seed: 2), c = try Sharing.code(storage, seed: 3)
        let a = try TestVaults.open(storage, seed: 1)
        try a.makeFile("hello", Array("from A".utf8))
        try a.share(with: b)
        try a.share(with: c)
        let codeA = try a.contactCode().code
        try a.lock()
        return (storage, codeA, b, c)
    }

    /// The newest generation any file of `files` holds as a root sealed with `vaultKey`'s RK, at
    /// either slot's context: what a holder of that key can find, wherever the file is.
    static func newestGeneration(in files: [String: [UInt8]], vaultKey: [UInt8]) throws -> UInt64? {
        let rootKey = try FormatTwoKeys.rootKey(vaultKey: try SecretBytes(copying: vaultKey))
        var newest: UInt64?
        for file in files.values {
            for slot in 0..<Format.indexSlotCount {
                guard let body = try? Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexRoot, version: 2, key: .secret(rootKey),
                                                          seal: .indexRootV2(slot: slot)),
                      let root = try? IndexRootV2.decode(body[...]) else { continue }
                newest = max(newest ?? 0, root.generation)
            }
        }
        return newest
    }

    /// The record a grant holds, opened as its recipient would.
    static func grant(_ storage: SimulatedStorageFolder, from a: ContactCode, to seed: UInt8) throws -> UnlockRecord {
        let recipient = try Sharing.identity(storage, seed: seed)
        let name = try GrantSeal.name(receiving: recipient, from: a.publicKey, location: Label.localLocation)
        return try GrantSeal.open(try #require(storage.snapshot[name]), recipient: recipient, sender: a.publicKey)
    }

    @Test func theRevokedHolderLosesWhatComesAfterAndTheOthersKeepIt() throws {
        let (storage, codeA, codeB, _) = try Self.sharedWithTwo()
        // B's copy of the storage as it was, and the keys B's grant gave.
        let copyOfB = storage.snapshot
        let oldGrant = try Self.grant(storage, from: codeA, to: 2)
        let oldGeneration = try #require(try Self.newestGeneration(in: copyOfB, vaultKey: oldGrant.vaultKey))

        let a = try TestVaults.open(storage, seed: 1)
        let count = storage.snapshot.count
        try a.unshare(with: codeB)
        #expect(storage.snapshot.count == count, "the rotation keeps the file count")
        try a.makeFile("later", Array("after B".utf8))
        #expect(try a.readAll("hello") == Array("from A".utf8))
        try a.lock()
        try checkStorageInvariants(storage)

        // A, and C through its grant sealed again, read everything.
        let again = try TestVaults.open(storage, seed: 1)
        #expect(try again.readAll("later") == Array("after B".utf8))
        try again.lock()
        let c = try Sharing.open(storage, seed: 3, by: codeA)
        #expect(try c.readAll("hello") == Array("from A".utf8) && c.readAll("later") == Array("after B".utf8))
        try c.lock()

        // B is told; nothing was written by trying.
        let before = storage.snapshot
        #expect(throws: SharingError.accessEnded) { try Sharing.open(storage, seed: 2, by: codeA) }
        #expect(throws: SharingError.accessEnded) { try Sharing.open(storage, seed: 2, by: codeA, readOnly: true) }
        #expect(storage.snapshot == before)

        // B's old copy with every file A has now laid over it (what `cp -a` of A's storage
        // into it gives), and B's old grant kept: the old keys open no root newer than B had,
        // and a vault B opens there is the old one, without "later".
        var merged = copyOfB
        merged.merge(storage.snapshot) { _, new in new }
        #expect(try Self.newestGeneration(in: merged, vaultKey: oldGrant.vaultKey) == oldGeneration)
        let stale = SimulatedStorageFolder()
        for (name, bytes) in merged { stale.tamper(name, with: bytes) }
        stale.tamper(try Sharing.grantName(storage, from: 1, to: codeB), with: copyOfB[try Sharing.grantName(storage, from: 1, to: codeB)])
        // (A's later commit may have refilled a page of that old root: then it does not open.)
        if let old = try? Sharing.open(stale, seed: 2, by: codeA, readOnly: true) {
            #expect(try old.readAll("hello") == Array("from A".utf8))
            #expect(throws: VaultError.notFound) { try old.readAll("later") }
            try old.lock()
        }
        // The new grant opens to keys B never held.
        let newGrant = try Self.grant(storage, from: codeA, to: 3)
        #expect(newGrant.vaultKey != oldGrant.vaultKey && newGrant.rootLocator != oldGrant.rootLocator)
    }

    @Test func endedAndReissuedGrantsLookLikeCovers() throws {
        let (storage, codeA, codeB, codeC) = try Self.sharedWithTwo()
        let a = try TestVaults.open(storage, seed: 1)
        try a.unshare(with: codeB)
        try a.lock()
        for code in [codeB, codeC] {
            let grant = try #require(storage.snapshot[try Sharing.grantName(storage, from: 1, to: code)])
            #expect(grant.count == Format.fileSize)
            #expect(Sharing.chiSquare(grant) < 400 && Sharing.chiSquare(Array(grant[..<GrantFile.paddingOffset])) < 400)
        }
        #expect(storage.snapshot.count % Format.groupSize == 0)
        #expect(try Self.grant(storage, from: codeA, to: 2).role == .ended)
    }

    @Test func badWithdrawalsChangeNothing() throws {
        let (storage, codeA, codeB, _) = try Self.sharedWithTwo()
        let codeD = try Sharing.code(storage, seed: 4)
        let a = try TestVaults.open(storage, seed: 1)
        let before = storage.snapshot
        #expect(throws: SharingError.notShared) { try a.unshare(with: codeD) }
        #expect(throws: GrantSeal.Failure.ownCode) { try a.unshare(with: codeA) }
        #expect(storage.snapshot == before)
        try a.unshare(with: codeB)
        let withdrawn = storage.snapshot
        #expect(throws: SharingError.notShared) { try a.unshare(with: codeB) }
        #expect(storage.snapshot == withdrawn)
        try a.lock()

        let readOnly = try TestVaults.open(storage, seed: 1, readOnly: true)
        let locked = storage.snapshot
        #expect(throws: VaultError.readOnly) { try readOnly.unshare(with: codeB) }
        try readOnly.lock()
        let shared = try Sharing.open(storage, seed: 3, by: codeA)
        #expect(throws: SharingError.sharedWithYou) { try shared.unshare(with: codeA) }
        try shared.lock()
        #expect(storage.snapshot == locked)

        // Shared again, B's ended grant becomes a grant at the same file.
        let again = try TestVaults.open(storage, seed: 1)
        try again.makeFile("for B again", [9])
        try again.share(with: codeB)
        try again.lock()
        #expect(storage.snapshot.count == locked.count)
        let b = try Sharing.open(storage, seed: 2, by: codeA)
        #expect(try b.readAll("for B again") == [9])
        try b.lock()
    }

    /// A holder mounted while their grant is withdrawn, in a storage both write: their next
    /// commit is refused with the access ended, and A never sees what they wrote.
    @Test func aHolderOpenAtTheWithdrawalIsToldAndNotTakenIn() throws {
        let (storage, codeA, codeB, _) = try Self.sharedWithTwo()
        let b = try Sharing.open(storage, seed: 2, by: codeA)
        let a = try TestVaults.open(storage, seed: 1)
        try a.unshare(with: codeB)
        try a.lock()
        try b.makeFile("from B later", [4])
        #expect(throws: (any Error).self) { try b.commit() }
        #expect(try b.readAll("from B later") == [4], "B's write stays with B")
        _ = try? b.lock()
        let reopened = try TestVaults.open(storage, seed: 1)
        #expect(throws: VaultError.notFound) { try reopened.readAll("from B later") }
        #expect(try reopened.readAll("hello") == Array("from A".utf8))
        try reopened.lock()
    }

    /// The withdrawal cut at each storage mutation, then a power loss: at that instant A's
    /// pattern opens the whole vault (read-only, before any open finishes the rotation) and C
    /// opens it through its grant; the next writable open finishes or undoes the rotation; B
    /// then has access (undone) or is told it ended and never reads what A writes next.
    @Test func aWithdrawalCutShortAtAnyMutationIsFinishedOrUndone() throws {
        var mutations = 0
        var undone = 0, finished = 0
        while true {
            let (storage, codeA, codeB, codeC) = try Self.sharedWithTwo()
            let a = try TestVaults.open(storage, seed: 1)
            storage.crash(afterMutations: mutations)
            let done = (try? a.unshare(with: codeB)) != nil
            storage.powerLoss()

            let atCrash = try TestVaults.open(storage, seed: 1, readOnly: true)
            #expect(try atCrash.readAll("hello") == Array("from A".utf8), "mutation \(mutations)")
            try atCrash.lock()
            let cAtCrash = try Sharing.open(storage, seed: 3, by: codeA, readOnly: true)
            #expect(try cAtCrash.readAll("hello") == Array("from A".utf8), "mutation \(mutations)")
            try cAtCrash.lock()

            let reopened = try TestVaults.open(storage, seed: 1)
            #expect(try reopened.readAll("hello") == Array("from A".utf8))
            try reopened.makeFile("later", [UInt8(mutations & 0xff)])
            try reopened.lock()
            try checkStorageInvariants(storage)
            let c = try Sharing.open(storage, seed: 3, by: codeA)
            #expect(try c.readAll("later") == [UInt8(mutations & 0xff)], "mutation \(mutations)")
            try c.lock()
            if let b = try? Sharing.open(storage, seed: 2, by: codeA) {
                // Undone: the vault is shared with B as before, and withdrawing again ends it.
                #expect(!done, "mutation \(mutations)")
                try b.lock()
                undone += 1
                let again = try TestVaults.open(storage, seed: 1)
                try again.unshare(with: codeB)
                try again.lock()
            } else {
                finished += 1
            }
            #expect(throws: SharingError.accessEnded) { try Sharing.open(storage, seed: 2, by: codeA) }
            let c2 = try Sharing.open(storage, seed: 3, by: codeA)
            #expect(try c2.readAll("later") == [UInt8(mutations & 0xff)])
            try c2.lock()
            _ = codeC
            if done { break }
            mutations += 1
        }
        #expect(mutations > 6 && undone > 0 && finished > 1, "\(mutations) mutations, \(undone) undone, \(finished) finished")
    }
}
