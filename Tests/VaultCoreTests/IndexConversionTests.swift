@testable import VaultCore
import Testing
import VaultCrypto
import VaultFormat
import VaultStore

/// §15.1's conversion behind the tests' option: an index-2 vault (or a format-1 one) becomes
/// index 3 at its first commit that writes, with its tree; a session that changes nothing
/// converts nothing.
@Suite struct IndexConversionTests {
    static func isThree(_ vault: Vault) -> Bool { vault.state.withLock { $0.committer.indexThree != nil } }

    @Test func anIndexTwoVaultConvertsAtItsFirstCommitThatWrites() throws {
        let storage = try TestVaults.storage()
        var vault = try TestVaults.open(storage)
        try IndexThreeVaultTests.fill(vault)
        try vault.lock()
        let two = storage.snapshot

        // Opened and locked with nothing changed: nothing written, still index 2.
        vault = try TestVaults.open(storage, indexThree: true)
        let tree = try vault.tree()
        try vault.lock()
        expectUnchanged(storage, since: two, "a session that changes nothing")
        vault = try TestVaults.open(storage)
        #expect(!Self.isThree(vault))
        try vault.lock()

        vault = try TestVaults.open(storage, indexThree: true)
        #expect(!Self.isThree(vault))
        _ = try vault.makeFile("late", [7])
        try vault.commit()
        #expect(Self.isThree(vault))
        try IndexThreeVaultTests.expectRecordsExact(vault, "converted")
        try vault.lock()

        #expect(throws: VaultError.newerFormat(IndexRootV3.envelopeVersion)) { _ = try TestVaults.open(storage) }
        vault = try TestVaults.open(storage, indexThree: true)
        defer { try? vault.lock() }
        #expect(Self.isThree(vault))
        var expected = tree
        expected["late"] = .file(mode: 0o644, content: [7])
        expectSame(try vault.tree(), expected, "converted and reopened")
        try IndexThreeVaultTests.expectRecordsExact(vault, "reopened")
        let report = try vault.check()
        #expect(report.isClean, "\(report.storageProblems) \(report.damagedItems)")
    }

    @Test func aFormatOneVaultIsUpgradedAndConvertedByOneCommit() throws {
        let storage = try TestVaults.storage()
        var vault = try TestVaults.open(storage, format: .one)
        try IndexThreeVaultTests.fill(vault)
        let tree = try vault.tree()
        try vault.lock()

        vault = try TestVaults.open(storage, indexThree: true)
        _ = try vault.makeFile("late", [7])
        try vault.commit()
        try vault.lock()
        vault = try TestVaults.open(storage, indexThree: true)
        defer { try? vault.lock() }
        #expect(Self.isThree(vault) && vault.state.withLock { $0.committer.format == .two })
        var expected = tree
        expected["late"] = .file(mode: 0o644, content: [7])
        expectSame(try vault.tree(), expected, "upgraded, converted and reopened")
        try IndexThreeVaultTests.expectRecordsExact(vault, "reopened")
        #expect(try vault.check().isClean)
    }
}

/// A cut at every storage mutation of the converting commit (a process crash, a power loss, a
/// failed write the vault goes on from) opens as index 2 with the tree of before, or as index 3
/// with the tree of after, and commits again.
@Suite struct IndexConversionCrashTests {
    static func random(_ n: Int) -> DeterministicRandom { DeterministicRandom(seed: [UInt8](repeating: UInt8(truncatingIfNeeded: 41 + n), count: 32)) }

    struct Run: Sendable {
        var before: [String: [UInt8]] = [:]
        var trees: (before: Tree, after: Tree) = ([:], [:])

        init() throws {
            let storage = try TestVaults.storage(random: DeterministicRandom(seed: [UInt8](repeating: 79, count: 32)))
            var vault = try TestVaults.open(storage, random: IndexConversionCrashTests.random(1))
            try IndexThreeVaultTests.fill(vault)
            try vault.lock()
            before = storage.snapshot
            vault = try TestVaults.open(storage, random: IndexConversionCrashTests.random(2), indexThree: true)
            trees.before = try vault.tree()
            try IndexConversionCrashTests.change(vault)
            try vault.commit()
            trees.after = try vault.tree()
            try vault.lock()
        }
    }

    static let run = Result { try Run() }

    static func change(_ vault: Vault) throws {
        try vault.remove(Array("note-5".utf8), from: Vault.rootID)
        _ = try vault.makeFile("late", [1, 2, 3])
    }

    @Test(arguments: CrashTests.Crash.allCases)
    func cutAtEveryMutationOfTheConvertingCommit(_ crash: CrashTests.Crash) throws {
        let run = try Self.run.get()
        try IndexThreeCutTests.cutEveryMutation(IndexLevelsCutTests.Case(step: 1, crash: crash), before: run.before, trees: run.trees,
                                                threeBefore: false, open: { storage, n in
                                                    try TestVaults.open(storage, random: Self.random(2 + n), indexThree: true)
                                                }, change: Self.change)
    }
}
