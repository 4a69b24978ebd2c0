@testable import VaultCore
import Testing
import VaultCrypto
import VaultFormat
import VaultStore

/// §15.1's policy, behind the tests' option: a vault whose root lists a grant (role 2, or role 4
/// once withdrawn) stays index 2 through a writing session, its roots of version 2 byte for
/// byte, since its grantee may run a release without index 3; `dotsafe upgrade`'s conversion
/// (`convertToIndexThree`) converts it by one commit, and converts nothing twice.
@Suite struct IndexConversionPolicyTests {
    /// The version byte of the root in each slot of the open vault's storage (2: index 2, 3:
    /// index 3), opened with its root key: what a release without index 3 reads first.
    static func rootVersions(_ vault: Vault) throws -> [UInt8] {
        try vault.state.withLock { state in
            let rootKey = try #require(state.committer.formatTwo).rootKey
            return try (0..<UInt8(Format.indexSlotCount)).map { slot in
                let name = try FormatTwoKeys.slotName(rootLocator: state.secrets.locator, slot: slot)
                let file = try #require(try vault.storage.read(name), "slot \(slot)")
                do {
                    let body = try Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexRoot, version: StorageFormat.two.envelopeVersion,
                                                       key: .secret(rootKey), seal: .indexRootV2(slot: UInt64(slot)))
                    body.wipeStorage()
                    return StorageFormat.two.envelopeVersion
                } catch FormatError.newerVersion(let version) {
                    return version
                }
            }
        }
    }

    /// The holds' rule alone: any other device, grant or sync base holds the vault at index 2.
    @Test(arguments: [1, 2], [0, 1])
    func anyDeviceGrantOrSyncBaseHoldsTheConversion(_ devices: Int, _ grants: Int) {
        for synced in [false, true] {
            let hold = Vault.IndexThreeHold(devices: devices, grants: grants, synced: synced)
            #expect(hold.isEmpty == (devices == 1 && grants == 0 && !synced), "\(hold)")
        }
    }

    @Test(arguments: [false, true])
    func aVaultWithAGrantStaysIndexTwoUntilUpgraded(withdrawn: Bool) throws {
        let (storage, _, codeB) = try VaultSharingTests.sharedStorage()
        if withdrawn {
            let a = try TestVaults.open(storage, seed: 1)
            try a.unshare(with: codeB)
            try a.lock()
        }
        var vault = try TestVaults.open(storage, seed: 1, indexThree: true)
        #expect(vault.indexThreeHold == Vault.IndexThreeHold(devices: 1, grants: 1, synced: false))
        let role = withdrawn ? IndexRootV2.SpecialFile.Role.endedGrant : .grant
        #expect(vault.state.withLock { $0.committer.formatTwo!.specialFiles.filter(\.isGrantFile).map(\.role) } == [role])
        _ = try vault.makeFile("late", [7])
        try vault.commit()
        #expect(vault.indexVersion == 2)
        #expect(try Self.rootVersions(vault) == [2, 2], "a writing session converts nothing")
        let tree = try vault.tree()
        try vault.lock()

        // This release without index 3 (a grantee's) opens it as before.
        vault = try TestVaults.open(storage, seed: 1)
        expectSame(try vault.tree(), tree, "reopened without index 3")
        try vault.lock()

        vault = try TestVaults.open(storage, seed: 1, indexThree: true)
        let before = storage.snapshot
        #expect(try vault.convertToIndexThree())
        #expect(vault.indexVersion == 3)
        #expect(try Self.rootVersions(vault) == [3, 3])
        try IndexThreeVaultTests.expectRecordsExact(vault, "upgraded")
        let generation = vault.generation
        #expect(try !vault.convertToIndexThree(), "index 3 already")
        #expect(vault.generation == generation)
        try vault.lock()
        #expect(storage.snapshot != before)

        #expect(throws: VaultError.newerFormat(IndexRootV3.envelopeVersion)) { _ = try TestVaults.open(storage, seed: 1) }
        vault = try TestVaults.open(storage, seed: 1, indexThree: true)
        defer { try? vault.lock() }
        expectSame(try vault.tree(), tree, "upgraded and reopened")
        #expect(vault.indexThreeHold.grants == 1, "the grant stays")
        let report = try vault.check()
        #expect(report.isClean, "\(report.storageProblems) \(report.damagedItems)")
    }

    @Test func theConversionRefusesReadOnlyAndNewVaultsWritingNothing() throws {
        let storage = try TestVaults.storage()
        let empty = storage.snapshot
        let new = try TestVaults.open(storage, indexThree: true)
        #expect(throws: VaultError.notFound) { try new.convertToIndexThree() }
        try new.lock()
        #expect(storage.snapshot == empty, "no empty vault made")

        var vault = try TestVaults.open(storage)
        try IndexThreeVaultTests.fill(vault)
        try vault.lock()
        let two = storage.snapshot
        vault = try TestVaults.open(storage, readOnly: true, indexThree: true)
        #expect(throws: VaultError.readOnly) { try vault.convertToIndexThree() }
        try vault.lock()
        expectUnchanged(storage, since: two, "a read-only open")
    }
}

/// A cut at every storage mutation of `dotsafe upgrade`'s commit, on a vault nothing else
/// changes: it opens with the same tree, as index 2 until the cut passes the commit point and
/// index 3 from there on (and after the commit returned, or the vault went on after a failed
/// operation), and commits again, clean.
@Suite struct IndexUpgradeCrashTests {
    static let run = Result { () throws -> (before: [String: [UInt8]], tree: Tree) in
        let storage = try TestVaults.storage(random: DeterministicRandom(seed: [UInt8](repeating: 83, count: 32)))
        let vault = try TestVaults.open(storage, random: IndexConversionCrashTests.random(1))
        try IndexThreeVaultTests.fill(vault)
        let tree = try vault.tree()
        try vault.lock()
        return (storage.snapshot, tree)
    }

    static func open(_ storage: SimulatedStorageFolder, _ n: Int) throws -> Vault {
        try TestVaults.open(storage, random: IndexConversionCrashTests.random(2 + n), indexThree: true)
    }

    @Test(arguments: CrashTests.Crash.allCases)
    func cutAtEveryMutationOfTheUpgradesCommit(_ crash: CrashTests.Crash) throws {
        let run = try Self.run.get()
        var mutations = 0, completed = false, converted = false
        while !completed {
            let storage = CrashTests.storage(run.before)
            let vault = try Self.open(storage, 0)
            // What `convertToIndexThree` does before its commit, which the cut stops.
            try vault.state.withLock { try $0.requestConversion() }
            completed = try crash.cut(storage, afterMutations: mutations) { try vault.commit() }
            let context = "\(crash) crash after \(mutations) mutations"
            if crash == .failure { try vault.lock() }
            let reopened = try Self.open(storage, 100)
            expectSame(try reopened.tree(), run.tree, context)
            let three = reopened.indexVersion == 3
            #expect(three || !converted, "\(context): index 2 after a shorter cut left index 3")
            if completed || crash == .failure { #expect(three, "\(context): the commit returned or the vault went on") }
            converted = converted || three
            if three { try IndexThreeVaultTests.expectRecordsExact(reopened, context) }
            _ = try reopened.makeFile("again-\(mutations)", [9])
            try reopened.commit()
            try IndexThreeVaultTests.expectRecordsExact(reopened, "\(context), then a commit")
            let report = try reopened.check()
            #expect(report.isClean, "\(context): \(report.storageProblems) \(report.damagedItems)")
            try reopened.lock()
            try checkStorageInvariants(storage)
            mutations += 1
            try #require(mutations < 1_000, "the commit never completed")
        }
        #expect(mutations > 4 && converted)
    }
}
