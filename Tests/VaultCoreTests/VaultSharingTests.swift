import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// docs/FORMAT.md §14.7, issue 14: each vault's identity, a grant written by `share`, and the
/// vault opened through it. Vaults A (seed 1), B (seed 2) and C (seed 3) share one storage in
/// memory, opened one after another: until sync exists that is how one place holds both
/// people's vaults (the mount tests copy the storage folder between people instead).
@Suite struct VaultSharingTests {
    static func open(_ storage: any StorageFolder, seed: UInt8, by code: ContactCode, readOnly: Bool = false) throws -> Vault {
        try Vault.open(storage: storage, secrets: TestVaults.secrets(seed), sharedBy: code,
                       options: Vault.Options(readOnly: readOnly, cacheBytes: 8 << 20), clock: ManualClock())
    }

    /// The vault of `seed`'s contact code (its identity made, and committed, if need be).
    static func code(_ storage: any StorageFolder, seed: UInt8) throws -> ContactCode {
        let vault = try TestVaults.open(storage, seed: seed)
        defer { try? vault.lock() }
        return try vault.contactCode().code
    }

    /// A with a file, shared with B. Returns both codes.
    static func sharedStorage() throws -> (storage: SimulatedStorageFolder, a: ContactCode, b: ContactCode) {
        let storage = try TestVaults.storage()
        let b = try code(storage, seed: 2)
        let a = try TestVaults.open(storage, seed: 1)
        try a.makeFile("hello", Array("from A".utf8))
        try a.share(with: b)
        let codeA = try a.contactCode().code
        try a.lock()
        return (storage, codeA, b)
    }

    /// The identity key of `seed`'s vault, from its owner's record.
    static func identity(_ storage: any StorageFolder, seed: UInt8) throws -> X25519.PrivateKey {
        let record = try #require(try FormatTwoVault.readUnlock(storage: storage, patternSecrets: TestVaults.secrets(seed))).record
        return try X25519.PrivateKey(rawRepresentation: record.identityKey)
    }

    static func grantName(_ storage: any StorageFolder, from seed: UInt8, to code: ContactCode) throws -> String {
        try GrantSeal.name(sharing: try identity(storage, seed: seed), with: code.publicKey, location: Label.localLocation)
    }

    @Test func eachVaultHasItsOwnIdentityMadeWithIt() throws {
        let storage = try TestVaults.storage()
        let a = try TestVaults.open(storage, seed: 1)
        #expect(a.isNew)
        let (code, shared) = try a.contactCode()
        #expect(!shared && !a.isNew, "a new vault is committed before its code is given")
        try a.lock()
        #expect(try Self.code(storage, seed: 1) == code)
        #expect(try Self.identity(storage, seed: 1).publicKey == code.publicKey)
        // A decoy (another pattern) has an identity of its own.
        #expect(try Self.code(storage, seed: 2) != code)
        try checkStorageInvariants(storage)
    }

    @Test func theRecipientOpensTheSharedVaultAndBothWrite() throws {
        let (storage, codeA, codeB) = try Self.sharedStorage()
        try checkStorageInvariants(storage)
        let shared = try Self.open(storage, seed: 2, by: codeA)
        #expect(shared.isShared)
        #expect(try shared.readAll("hello") == Array("from A".utf8))
        // Its code is B's own; B cannot pass the vault on.
        let (code, sharedWithYou) = try shared.contactCode()
        #expect(code == codeB && sharedWithYou)
        #expect(throws: SharingError.sharedWithYou) { try shared.share(with: codeB) }
        try shared.makeFile("from-b", [2])
        try shared.lock()

        let a = try TestVaults.open(storage, seed: 1)
        #expect(try a.readAll("from-b") == [2])
        try a.makeFile("later", [3])
        try a.lock()
        let again = try Self.open(storage, seed: 2, by: codeA)
        #expect(try again.readAll("later") == [3])
        try again.lock()
        // B's own vault is its own: nothing of A's in it.
        let own = try TestVaults.open(storage, seed: 2)
        #expect(throws: VaultError.notFound) { try own.lookup(Vault.rootID, Array("hello".utf8)) }
        try own.lock()
        try checkStorageInvariants(storage)
    }

    @Test func anyoneElseFindsNothingAndNothingChanges() throws {
        let (storage, codeA, codeB) = try Self.sharedStorage()
        let before = storage.snapshot
        // C, with a new vault (no identity yet), then with one: the same as nobody sharing.
        #expect(throws: SharingError.noGrant) { try Self.open(storage, seed: 3, by: codeA) }
        #expect(storage.snapshot == before)
        let codeC = try Self.code(storage, seed: 3)
        let withC = storage.snapshot
        #expect(throws: SharingError.noGrant) { try Self.open(storage, seed: 3, by: codeA) }
        // B naming the wrong sharer, A naming itself.
        #expect(throws: SharingError.noGrant) { try Self.open(storage, seed: 2, by: codeC) }
        #expect(throws: GrantSeal.Failure.ownCode) { try Self.open(storage, seed: 1, by: codeA) }
        #expect(storage.snapshot == withC)

        // A grant changed in any authenticated byte, or one meant for C put at B's name.
        let name = try Self.grantName(storage, from: 1, to: codeB)
        let grant = try #require(storage.snapshot[name])
        for offset in [3, 20, 60, 90, 1_119] {
            var changed = grant
            changed[offset] ^= 0x01
            storage.tamper(name, with: changed)
            #expect(throws: GrantSeal.Failure.doesNotOpen) { try Self.open(storage, seed: 2, by: codeA) }
        }
        let a = try TestVaults.open(storage, seed: 1)
        try a.share(with: codeC)
        try a.lock()
        storage.tamper(name, with: storage.snapshot[try Self.grantName(storage, from: 1, to: codeC)])
        let planted = storage.snapshot
        #expect(throws: GrantSeal.Failure.doesNotOpen) { try Self.open(storage, seed: 2, by: codeA) }
        #expect(storage.snapshot == planted)
        storage.tamper(name, with: grant)
        let shared = try Self.open(storage, seed: 2, by: codeA)
        #expect(try shared.readAll("hello") == Array("from A".utf8))
        try shared.lock()
    }

    @Test func badSharesChangeNothing() throws {
        let storage = try TestVaults.storage()
        let codeB = try Self.code(storage, seed: 2)
        let a = try TestVaults.open(storage, seed: 1)
        try a.makeFile("hello", [1])
        let codeA = try a.contactCode().code
        let before = storage.snapshot
        #expect(throws: GrantSeal.Failure.ownCode) { try a.share(with: codeA) }
        #expect(throws: GrantSeal.Failure.unusableCode) { try a.share(with: ContactCode(publicKey: [UInt8](repeating: 0, count: 32))) }
        #expect(storage.snapshot == before)
        try a.share(with: codeB)
        let shared = storage.snapshot
        #expect(throws: SharingError.alreadyShared) { try a.share(with: codeB) }
        #expect(storage.snapshot == shared)
        try a.lock()

        let codeD = try Self.code(SimulatedStorageFolder(), seed: 5)
        let readOnly = try TestVaults.open(storage, seed: 1, readOnly: true)
        let locked = storage.snapshot
        #expect(throws: VaultError.readOnly) { try readOnly.share(with: codeD) }
        #expect(storage.snapshot == locked)
        try readOnly.lock()
        let formatOne = try TestVaults.open(storage, seed: 4, format: .one)
        try formatOne.makeFile("x", [1])
        try formatOne.commit()
        #expect(throws: SharingError.formatOne) { try formatOne.contactCode() }
        try formatOne.lock()
        // Opened writable again, it is upgraded (§13.9) by the commit `contact` makes, then
        // gets its identity; read-only it stays format 1.
        let readOnlyOne = try TestVaults.open(storage, seed: 4, readOnly: true)
        #expect(throws: SharingError.formatOne) { try readOnlyOne.contactCode() }
        try readOnlyOne.lock()
        let upgraded = try TestVaults.open(storage, seed: 4)
        let codeOne = try upgraded.contactCode().code
        #expect(upgraded.formatVersion == 2)
        try upgraded.lock()
        #expect(try Self.code(storage, seed: 4) == codeOne)
        let reopened = try TestVaults.open(storage, seed: 4)
        #expect(try reopened.readAll("x") == [1])
        try reopened.lock()
    }

    /// §14.7: a format-2 vault made before identities gets one at its first `contact` or
    /// `share`, by an atomic replace of its owner's record; a crash leaves the old or the new.
    @Test func aVaultWithoutAnIdentityGetsOneAtomically() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage, seed: 1)
        try vault.makeFile("kept", [7])
        try vault.lock()
        let unlock = try #require(try FormatTwoVault.readUnlock(storage: storage, patternSecrets: TestVaults.secrets(1)))
        var record = unlock.record
        record.identityKey = []
        storage.tamper(unlock.name, with: try FormatTwoVault.sealOwnerRecord(record, patternSecrets: TestVaults.secrets(1),
                                                                            random: SystemRandom()))
        var mutations = 0
        while true {
            let reopened = try TestVaults.open(storage, seed: 1)
            storage.crash(afterMutations: mutations)
            let code = try? reopened.contactCode().code
            storage.powerLoss()
            let after = try TestVaults.open(storage, seed: 1)
            #expect(try after.readAll("kept") == [7])
            let record = try #require(try FormatTwoVault.readUnlock(storage: storage, patternSecrets: TestVaults.secrets(1))).record
            if let code {
                #expect(try X25519.PrivateKey(rawRepresentation: record.identityKey).publicKey == code.publicKey)
                #expect(try after.contactCode().code == code)
                try after.lock()
                break
            }
            #expect(record.identityKey.isEmpty)
            try after.lock()
            mutations += 1
        }
        try checkStorageInvariants(storage)
    }

    /// A share cut short at each of its storage mutations (then a power loss) leaves A's vault
    /// as it was or shared, and sharing again completes it.
    @Test func aShareCutShortAtAnyMutationCanBeDoneAgain() throws {
        var mutations = 0
        while true {
            let storage = try TestVaults.storage()
            let codeB = try Self.code(storage, seed: 2)
            let a = try TestVaults.open(storage, seed: 1)
            try a.makeFile("hello", [1, 2, 3])
            let codeA = try a.contactCode().code
            storage.crash(afterMutations: mutations)
            let done = (try? a.share(with: codeB)) != nil
            #expect(storage.snapshot.count % Format.groupSize == 0, "R-BLK-5 at the cut after \(mutations) mutations")
            storage.powerLoss()
            #expect(storage.snapshot.count % Format.groupSize == 0, "R-BLK-5 after the power loss")
            let reopened = try TestVaults.open(storage, seed: 1)
            #expect(storage.snapshot.count % Format.groupSize == 0, "R-BLK-5 at the reopen")
            #expect(try reopened.readAll("hello") == [1, 2, 3])
            do { try reopened.share(with: codeB) } catch SharingError.alreadyShared {}
            try reopened.lock()
            try checkStorageInvariants(storage)
            let shared = try Self.open(storage, seed: 2, by: codeA)
            #expect(try shared.readAll("hello") == [1, 2, 3])
            try shared.lock()
            if done { break }
            mutations += 1
        }
        #expect(mutations > 2)
    }

    /// Grants among the storage's files pass the checks covers pass: size, name form, the file
    /// count in steps of 16, bytes with a byte histogram like a cover's, and no fixed bit where
    /// an unmasked X25519 key would have one.
    @Test func grantsLookLikeCovers() throws {
        let (storage, _, codeB) = try Self.sharedStorage()
        let name = try Self.grantName(storage, from: 1, to: codeB)
        let grant = try #require(storage.snapshot[name])
        #expect(grant.count == Format.fileSize && FileName.isWellFormed(name))
        #expect(storage.snapshot.count % Format.groupSize == 0)
        let cover = try #require(try TestVaults.storage().snapshot.values.first)
        #expect(Self.chiSquare(cover) < 400)
        #expect(Self.chiSquare(grant) < 400, "a grant's bytes are as uniform as a cover's")
        #expect(Self.chiSquare(Array(grant[..<GrantFile.paddingOffset])) < 400, "its sealed head too")

        // enc, an X25519 public key, always has its top bit clear (byte 31, file byte 47): masked,
        // it is set in about half of the grants.
        let record = UnlockRecord(role: .grant, vaultKey: [UInt8](repeating: 1, count: 32), rootLocator: [UInt8](repeating: 2, count: 32),
                                  ownFile: FileRef(device: 0, number: 40))
        var set = 0
        for _ in 0..<200 {
            let file = try GrantSeal.seal(record, from: try X25519.PrivateKey(), to: codeB.publicKey)
            if file[GrantFile.encOffset + 31] & 0x80 != 0 { set += 1 }
        }
        #expect((60...140).contains(set), "\(set) of 200")
    }

    /// Pearson's statistic of the byte histogram against uniform (255 degrees of freedom: a
    /// uniform source stays below 400 but with probability about 10^-8).
    static func chiSquare(_ bytes: [UInt8]) -> Double {
        var counts = [Int](repeating: 0, count: 256)
        for byte in bytes { counts[Int(byte)] += 1 }
        let expected = Double(bytes.count) / 256
        return counts.reduce(0) { $0 + (Double($1) - expected) * (Double($1) - expected) / expected }
    }
}
