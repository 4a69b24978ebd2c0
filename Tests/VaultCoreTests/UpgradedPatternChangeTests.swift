import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// docs/FORMAT.md §13.12 for a vault upgraded from format 1 (design §G): its RL and device 0's
/// NKd came from the old pattern, so the change also moves the slots and every file to names
/// of a random RL' and NKd'. Afterwards the new pattern opens every file, the old one an empty
/// vault, no storage name is one the old pattern derives, and the coercer (ADVERSARIES.md) with
/// the old pattern's key opens nothing at all. Crashes: `PatternChangeCrashTests`.
@Suite struct UpgradedPatternChangeTests {
    /// A format-1 vault (a pack, a two-chunk file, a folder), upgraded by a session that writes.
    static func upgradedStorage(seed: UInt8 = 1) throws -> SimulatedStorageFolder {
        let storage = try TestVaults.storage()
        let old = try TestVaults.open(storage, seed: seed, format: .one)
        try old.create(.folder, in: Vault.rootID, named: Array("dir".utf8), mode: 0o755)
        try old.makeFile("small", TestVaults.content(1000, seed: 1), in: try old.id(at: "dir"))
        try old.makeFile("big", TestVaults.content(Format.payloadSize + 5000, seed: 2))
        try old.lock()
        let vault = try TestVaults.open(storage, seed: seed)
        try vault.makeFile("added", TestVaults.content(700, seed: 3))
        try vault.lock()
        let upgraded = try TestVaults.open(storage, seed: seed, readOnly: true)
        defer { try? upgraded.lock() }
        try #require(upgraded.formatVersion == 2 && upgraded.namesArePatternDerived == (true, true))
        return storage
    }

    /// The names the pattern `seed` derives that a vault of it could use: its unlock record,
    /// its format-1 slots, and its NK's file names up to `count`.
    static func patternNames(_ seed: UInt8, count: Int) throws -> Set<String> {
        let secrets = try TestVaults.secrets(seed)
        var names: Set<String> = [try FormatTwoKeys.unlockName(locator: secrets.locator)]
        for number in 0..<UInt64(count) { names.insert(try secrets.fileName(number)) }
        return names
    }

    @Test func theNewPatternOpensEveryFileAndTheOldOneNamesNothing() throws {
        let storage = try Self.upgradedStorage()
        let expected = try PatternChangeTests.contents(storage, 1)
        let before = storage.snapshot
        let oldNames = try Self.patternNames(1, count: before.count + 64)
        #expect(before.keys.filter { oldNames.contains($0) }.count >= 16, "an upgraded vault's files have the old pattern's names")

        let counting = CountingStorageFolder(storage)
        let vault = try TestVaults.open(counting, seed: 1)
        var steps: [Int] = []
        try vault.changePattern(to: try TestVaults.secrets(2)) { steps.append($0) }
        #expect(vault.namesArePatternDerived == (false, false))
        try vault.lock()
        #expect(steps == [1, 2, 3])
        let counts = counting.current
        #expect(counts.creates == 0 && counts.removes == 0 && counts.renames > 10, "\(counts)")
        let after = storage.snapshot
        #expect(after.count == before.count)
        try checkStorageInvariants(storage)

        #expect(try PatternChangeTests.contents(storage, 2) == expected)
        #expect(try PatternChangeTests.contents(storage, 1) == nil)
        #expect(try Vault.patternUse(try TestVaults.secrets(1), in: storage) == Vault.PatternUse.none)
        #expect(after.keys.filter { oldNames.contains($0) }.isEmpty, "a storage name still comes from the old pattern")
        // The old record's bytes are nowhere, nor the old slots'.
        let oldRecord = try #require(before[try FormatTwoKeys.unlockName(locator: try TestVaults.secrets(1).locator)])
        #expect(!after.values.contains(oldRecord))
        for slot: UInt8 in 0...1 {
            let old = try #require(before[try TestVaults.secrets(1).indexName(slot: slot)])
            #expect(!after.values.contains(old), "slot \(slot)'s old bytes are still in a file")
        }

        // The coercer with the old pattern's key opens nothing, in either format; with the new
        // one it opens the vault (its method reaches what is there).
        let oldKey = [UInt8](repeating: 1, count: 32), newKey = [UInt8](repeating: 2, count: 32)
        #expect(try FormatTwoCoercer(files: after, patternKey: oldKey).recover().plaintexts.isEmpty)
        #expect(try Coercer(files: after, patternKey: oldKey).recover().plaintexts.isEmpty)
        let found = try FormatTwoCoercer(files: after, patternKey: newKey).recover().plaintexts
        #expect(found.contains { $0.contains(Array(TestVaults.content(700, seed: 3)[0..<40])) }, "the coercer opens the current vault")

        let check = try TestVaults.open(storage, seed: 2, readOnly: true)
        let report = try check.check()
        #expect(report.isClean, "\(report.storageProblems)")
        try check.lock()

        // Changed again, now an ordinary format-2 vault: the first pattern opens it again.
        let again = try TestVaults.open(storage, seed: 2)
        try again.changePattern(to: try TestVaults.secrets(1))
        try again.lock()
        #expect(try PatternChangeTests.contents(storage, 1) == expected && PatternChangeTests.contents(storage, 2) == nil)
        #expect(storage.snapshot.count == before.count)
    }

    /// Written to after the change, in the same session and the next: the vault goes on under
    /// its new names.
    @Test func theVaultWritesOnAfterTheChange() throws {
        let storage = try Self.upgradedStorage()
        let vault = try TestVaults.open(storage, seed: 1)
        try vault.changePattern(to: try TestVaults.secrets(2))
        try vault.makeFile("later", [4, 5, 6])
        try vault.remove(Array("big".utf8), from: Vault.rootID)
        try vault.lock()
        let reopened = try TestVaults.open(storage, seed: 2)
        #expect(try reopened.readAll("later") == [4, 5, 6] && reopened.readAll("added") == TestVaults.content(700, seed: 3))
        try reopened.makeFile("next", [7])
        try reopened.lock()
        let names = try Self.patternNames(1, count: storage.snapshot.count + 64)
        #expect(storage.snapshot.keys.filter { names.contains($0) }.isEmpty)
        #expect(try PatternChangeTests.contents(storage, 2)?.keys.sorted() == ["added", "dir", "dir/small", "later", "next"])
        try checkStorageInvariants(storage)
    }

    /// Shared: the move seals the grant again to the new root locator (step 5a). The grantee
    /// opens every file through it; the old pattern opens nothing and names nothing; a grant
    /// withdrawn before the change still says that access ended.
    @Test func aSharedUpgradedVaultMovesAndItsGrantFollows() throws {
        let storage = try Self.upgradedStorage()
        let expected = try PatternChangeTests.contents(storage, 1)
        let code = try VaultSharingTests.code(storage, seed: 3), withdrawn = try VaultSharingTests.code(storage, seed: 4)
        let owner = try TestVaults.open(storage, seed: 1)
        try owner.share(with: withdrawn)
        try owner.unshare(with: withdrawn)
        try owner.share(with: code)
        let codeA = try owner.contactCode().code
        try owner.lock()
        let grantName = try GrantSeal.name(receiving: VaultSharingTests.identity(storage, seed: 3), from: codeA.publicKey,
                                           location: Label.localLocation)
        let grantBefore = try #require(storage.snapshot[grantName])
        let vault = try TestVaults.open(storage, seed: 1)
        try vault.changePattern(to: try TestVaults.secrets(2))
        #expect(vault.namesArePatternDerived == (false, false))
        try vault.lock()
        #expect(storage.snapshot[grantName] != grantBefore, "the grant was sealed again")
        let names = try Self.patternNames(1, count: storage.snapshot.count + 64)
        #expect(storage.snapshot.keys.filter { names.contains($0) }.isEmpty, "a storage name still comes from the old pattern")
        #expect(try PatternChangeTests.contents(storage, 2) == expected && PatternChangeTests.contents(storage, 1) == nil)
        let grantee = try VaultSharingTests.open(storage, seed: 3, by: codeA, readOnly: true)
        #expect(try grantee.readAll("added") == TestVaults.content(700, seed: 3) && grantee.readAll("small", in: try grantee.id(at: "dir")) == TestVaults.content(1000, seed: 1))
        try grantee.lock()
        #expect(throws: SharingError.accessEnded) { try VaultSharingTests.open(storage, seed: 4, by: codeA, readOnly: true) }
        try checkStorageInvariants(storage)
    }

    /// A grant whose recipient the owner's record does not list (a share of a release before tag
    /// 1025) cannot be sealed again: refused with its one line, which says what to do, nothing
    /// written.
    @Test func aGrantOfAnUnknownRecipientIsRefused() throws {
        let storage = try Self.upgradedStorage()
        let code = try VaultSharingTests.code(storage, seed: 3)
        let owner = try TestVaults.open(storage, seed: 1)
        try owner.share(with: code)
        try owner.lock()
        // The owner's record as a release before tag 1025 wrote it.
        let found = try #require(try FormatTwoVault.readUnlock(storage: storage, patternSecrets: TestVaults.secrets(1))).record
        let older = UnlockRecord(vaultKey: found.vaultKey, rootLocator: found.rootLocator, ownFile: found.ownFile,
                                 identityKey: found.identityKey, optional: found.optional.filter { $0.tag != UnlockRecord.Tag.recipients })
        try VaultRotation.writeOwnerRecord(older, storage: storage, patternSecrets: TestVaults.secrets(1), random: SystemRandom())
        let before = storage.snapshot
        let vault = try TestVaults.open(storage, seed: 1)
        #expect(throws: PatternChangeError.grantOfUnknownRecipient) { try vault.changePattern(to: try TestVaults.secrets(2)) }
        try vault.lock()
        #expect(storage.snapshot == before)
        #expect(PatternChangeError.grantOfUnknownRecipient.description
                == "this vault, upgraded from the format of an older DotSafe (format 1), holds a grant made by an older DotSafe, which does "
                + "not record its recipient, and a change of its pattern must seal every grant again: withdraw that grant "
                + "(dotsafe unshare), change the pattern, then share again")
    }

    /// What that line says to do: the grant withdrawn (a random RL since, device 0's NKd still
    /// NK), the change moves every name; the old pattern names nothing, the new one opens it
    /// all, and the vault can be shared again.
    @Test func aWithdrawnShareLetsThePatternChangeAndMoveEveryName() throws {
        let storage = try Self.upgradedStorage()
        let expected = try PatternChangeTests.contents(storage, 1)
        let code = try VaultSharingTests.code(storage, seed: 3)
        let owner = try TestVaults.open(storage, seed: 1)
        try owner.share(with: code)
        try owner.unshare(with: code)
        #expect(owner.namesArePatternDerived == (false, true), "a withdrawal moves RL, not NKd")
        try owner.lock()
        let vault = try TestVaults.open(storage, seed: 1)
        try vault.changePattern(to: try TestVaults.secrets(2))
        #expect(vault.namesArePatternDerived == (false, false))
        try vault.share(with: code)
        try vault.lock()
        let names = try Self.patternNames(1, count: storage.snapshot.count + 64)
        #expect(storage.snapshot.keys.filter { names.contains($0) }.isEmpty, "a storage name still comes from the old pattern")
        #expect(try PatternChangeTests.contents(storage, 2) == expected && PatternChangeTests.contents(storage, 1) == nil)
        #expect(try FormatTwoCoercer(files: storage.snapshot, patternKey: [UInt8](repeating: 1, count: 32)).recover().plaintexts.isEmpty)
        try checkStorageInvariants(storage)
    }

    /// The state a crash right after the move's commit point leaves (§13.12 step 2 done).
    static func cutAfterCommitPoint() throws -> SimulatedStorageFolder {
        let storage = try upgradedStorage()
        let vault = try TestVaults.open(storage, seed: 1)
        var cut = false
        do {
            try vault.changePattern(to: try TestVaults.secrets(2)) { step in
                if step == 1 { storage.crash(afterMutations: 8) }
            }
        } catch VaultError.store(.simulatedCrash) {
            cut = true
        }
        storage.processCrash()
        try #require(cut)
        return storage
    }

    /// fsck (a read-only check) in the middle of the move: files are at either name, and the
    /// storage is clean; the open that writes finishes the move.
    @Test func aCheckInTheMiddleOfTheMoveIsClean() throws {
        let storage = try Self.cutAfterCommitPoint()
        let expected = try PatternChangeTests.contents(storage, 1)
        #expect(expected != nil)
        #expect(try PatternChangeTests.contents(storage, 2) == nil)
        let viaOld = try TestVaults.open(storage, seed: 1, readOnly: true)
        let report = try viaOld.check()
        #expect(report.isClean, "\(report.storageProblems)")
        try viaOld.lock()
        let finishing = try TestVaults.open(storage, seed: 1)
        #expect(finishing.openedThroughFormerPattern)
        try finishing.lock()
        #expect(try PatternChangeTests.contents(storage, 2) == expected && PatternChangeTests.contents(storage, 1) == nil)
        let names = try Self.patternNames(1, count: storage.snapshot.count + 64)
        #expect(storage.snapshot.keys.filter { names.contains($0) }.isEmpty)
    }
}
