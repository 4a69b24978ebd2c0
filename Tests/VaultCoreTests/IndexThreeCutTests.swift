import Testing
import VaultCrypto
@testable import VaultCore
import VaultFormat
import VaultStore

/// R-FS-2 for index version 3 (docs/FORMAT.md §15): a cut at every storage mutation of its
/// first commit and of one that changes names, files and a folder (a process crash, a power
/// loss, or a failed write the vault goes on from) leaves the tree of before or after, with
/// records exact for it, the clean run's files, and a vault that commits again.
@Suite struct IndexThreeCutTests {
    static let steps: [@Sendable (Vault) throws -> Void] = [
        { vault in try IndexThreeVaultTests.fill(vault) },  // 0: the first commit writes index 3
        { vault in  // 1: names, a folder, packs and chunks change
            let docs = try vault.lookup(Vault.rootID, Array("docs".utf8))
            try vault.remove(Array("note-5".utf8), from: Vault.rootID)
            try vault.rename(Array("note-6".utf8), in: docs, to: Array("note-6".utf8), in: Vault.rootID)
            _ = try vault.create(.folder, in: docs, named: Array("inner".utf8), mode: 0o755)
            try vault.write(try vault.lookup(docs, Array("big".utf8)), offset: 10, bytes: Array("changed".utf8))
            _ = try vault.makeFile("late", [1, 2, 3])
        },
    ]

    static func random(step: Int) -> DeterministicRandom { DeterministicRandom(seed: [UInt8](repeating: UInt8(truncatingIfNeeded: 29 * step + 3), count: 32)) }

    static func open(_ storage: SimulatedStorageFolder, step: Int) throws -> Vault {
        try TestVaults.open(storage, random: random(step: step), indexThree: true)
    }

    /// The storage and tree before each step and after the last, from a run without cuts.
    static let clean = Result { try CrashTests.CleanRun(seed: 78, steps: steps, open: { try open($0, step: $1) }) }

    static let cases = steps.indices.flatMap { step in CrashTests.Crash.allCases.map { IndexLevelsCutTests.Case(step: step, crash: $0) } }

    @Test(arguments: cases)
    func cutAtEveryMutationOfACommit(_ testCase: IndexLevelsCutTests.Case) throws {
        let run = try Self.clean.get()
        try Self.cutEveryMutation(testCase, before: run.storages[testCase.step], trees: (run.trees[testCase.step], run.trees[testCase.step + 1]),
                                  open: { try Self.open($0, step: testCase.step + $1) }, change: Self.steps[testCase.step])
    }

    /// Cuts `change`'s commit after each count of storage mutations in turn, on a copy of
    /// `before` opened by `open(storage, n)` (n: 0 for the cut run, 100 after): the vault opens
    /// with the tree of before or after (after, if the commit returned or the vault went on),
    /// as index 3 when after (`threeAfter`, index 2 before: a conversion), records exact, and
    /// commits again, clean.
    static func cutEveryMutation(_ testCase: IndexLevelsCutTests.Case, before: [String: [UInt8]], trees: (before: Tree, after: Tree),
                                 threeBefore: Bool = true, open: (SimulatedStorageFolder, Int) throws -> Vault,
                                 change: (Vault) throws -> Void) throws {
        var mutations = 0, completed = false
        while !completed {
            let storage = CrashTests.storage(before)
            let vault = try open(storage, 0)
            try change(vault)
            completed = try testCase.crash.cut(storage, afterMutations: mutations) { try vault.commit() }
            let context = "\(testCase), cut after \(mutations) mutations"
            if testCase.crash == .failure { try vault.lock() }
            let reopened = try open(storage, 100)
            let tree = try reopened.tree()
            #expect(tree == trees.before || tree == trees.after, "\(context): neither before nor after: \(treeDifference(tree, trees.after))")
            if completed || testCase.crash == .failure { expectSame(tree, trees.after, "\(context): the commit returned or the vault went on") }
            let three = reopened.state.withLock { $0.committer.indexThree != nil }
            // A new vault cut before its first root is a new vault again, index 3 from its first commit.
            if !tree.isEmpty { #expect(three == (tree == trees.after || threeBefore), "\(context): index 3 is \(three)") }
            if three && !tree.isEmpty { try IndexThreeVaultTests.expectRecordsExact(reopened, context) }
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
        #expect(mutations > 4)
    }
}
