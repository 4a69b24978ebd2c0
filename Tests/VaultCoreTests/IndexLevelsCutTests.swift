import Testing
import VaultCrypto
@testable import VaultCore
import VaultFormat
import VaultStore

/// R-FS-2 for the interior level (docs/FORMAT.md §13.5, "Writing the levels"): a cut at every
/// storage mutation of a commit that adds the level, of one that writes a leaf and its parent, and
/// of one that drops the level (a process crash, a power loss, or a failed write the vault goes on
/// from) leaves the tree of before or after, with the level it had then, the storage's invariants
/// and files, and a vault that commits again. Roots of 2 refs and interior pages of 3: a few
/// thousand files of long names make the level.
@Suite struct IndexLevelsCutTests {
    static let fanOut = PageTable.FanOut(root: 2, interior: 3)

    static func name(_ i: Int) -> String { "\(i)-" + String(repeating: "n", count: 200) }

    /// Step 0 makes the vault (one level); each later one is a commit that the cases cut.
    static let steps: [@Sendable (Vault) throws -> Void] = [
        { vault in try makeFiles(vault, 0..<800) },
        { vault in try makeFiles(vault, 800..<2_300) },  // 1: the leaves outgrow the root: the level comes
        { vault in try vault.write(try vault.id(at: name(1_500)), offset: 0, bytes: Array("FILE".utf8)) },  // 2: a leaf and its parent
        { vault in  // 3: all but a few go: the level goes
            for i in 0..<2_300 where i % 500 != 0 { try vault.remove(Array(name(i).utf8), from: Vault.rootID) }
        },
    ]

    static func makeFiles(_ vault: Vault, _ range: Range<Int>) throws {
        for i in range { try vault.makeFile(name(i), i % 500 == 0 ? Array("file \(i)".utf8) : []) }
    }

    static func random(step: Int) -> DeterministicRandom { DeterministicRandom(seed: [UInt8](repeating: UInt8(truncatingIfNeeded: 31 * step + 5), count: 32)) }

    static func open(_ storage: SimulatedStorageFolder, step: Int) throws -> Vault {
        try TestVaults.open(storage, random: random(step: step), fanOut: fanOut)
    }

    static func level(_ vault: Vault) -> UInt8 { vault.state.withLock { $0.committer.pageTable.top.level } }

    /// The storage, tree and level before each step and after the last, from a run without cuts.
    struct CleanRun: Sendable {
        var storages: [[String: [UInt8]]] = []
        var trees: [Tree] = []
        var levels: [UInt8] = []

        init() throws {
            let storage = try TestVaults.storage(random: DeterministicRandom(seed: [UInt8](repeating: 77, count: 32)))
            storages.append(storage.snapshot)
            trees.append([:])
            levels.append(0)
            for (step, apply) in IndexLevelsCutTests.steps.enumerated() {
                let vault = try IndexLevelsCutTests.open(storage, step: step)
                try apply(vault)
                try vault.commit()
                trees.append(try vault.tree())
                levels.append(IndexLevelsCutTests.level(vault))
                try vault.lock()
                try checkStorageInvariants(storage)
                storages.append(storage.snapshot)
            }
        }
    }

    static let clean = Result { try CleanRun() }

    /// The steps do what the cases claim: the level comes at step 1, stays at 2, goes at 3.
    @Test func stepsAddKeepAndDropTheLevel() throws {
        #expect(try Self.clean.get().levels == [0, 0, 1, 1, 0])
    }

    struct Case: Sendable, CustomStringConvertible {
        var step: Int
        var crash: CrashTests.Crash
        var description: String { "step \(step), \(crash) crash" }
    }

    static let cases = (1..<steps.count).flatMap { step in CrashTests.Crash.allCases.map { Case(step: step, crash: $0) } }

    @Test(arguments: cases)
    func cutAtEveryMutationOfACommit(_ testCase: Case) throws {
        let run = try Self.clean.get()
        let step = testCase.step
        var mutations = 0, completed = false
        while !completed {
            let storage = CrashTests.storage(run.storages[step])
            let vault = try Self.open(storage, step: step)
            try Self.steps[step](vault)
            completed = try testCase.crash.cut(storage, afterMutations: mutations) { try vault.commit() }
            if testCase.crash == .failure {
                try checkAfterFailure(vault, storage, run, step: step, context: "\(testCase) after \(mutations) mutations")
                mutations += 1
                continue
            }
            try check(storage, run, step: step, context: "\(testCase), cut after \(mutations) mutations", completed: completed)
            mutations += 1
            try #require(mutations < 1_000, "the commit never completed")
        }
        #expect(mutations > 4)
    }

    /// A failed storage operation (a full disk) and the same vault goes on: its lock stores the
    /// state in memory, with the level of after, and a group more than a clean run at most (as
    /// `CrashTests`: the retry may place a page in a group the first attempt would have freed).
    private func checkAfterFailure(_ vault: Vault, _ storage: SimulatedStorageFolder, _ run: CleanRun, step: Int, context: String) throws {
        try vault.lock()
        let reopened = try Self.open(storage, step: step + 100)
        expectSame(try reopened.tree(), run.trees[step + 1], "\(context), then lock")
        #expect(Self.level(reopened) == run.levels[step + 1], "\(context): the level")
        let report = try reopened.check()
        #expect(report.isClean, "\(context): \(report.storageProblems) \(report.damagedItems)")
        try reopened.lock()
        try checkStorageInvariants(storage)
        let count = storage.snapshot.count, clean = run.storages[step + 1].count
        #expect(count == clean || count == clean + 16, "\(context): \(count) files, a clean run has \(clean)")
    }

    /// The vault opens with the tree and level of before or after the commit (after, if it
    /// returned), the storage holds exactly the files a clean run has, and the vault works on.
    private func check(_ storage: SimulatedStorageFolder, _ run: CleanRun, step: Int, context: String, completed: Bool) throws {
        let before = run.trees[step], after = run.trees[step + 1]
        let vault = try Self.open(storage, step: step + 100)
        let tree = try vault.tree()
        #expect(tree == before || tree == after, "\(context): neither before nor after: \(treeDifference(tree, after))")
        if completed { expectSame(tree, after, "\(context): the commit returned") }
        #expect(Self.level(vault) == run.levels[tree == after ? step + 1 : step], "\(context): the level")
        try vault.lock()
        try checkStorageInvariants(storage)
        let count = run.storages[tree == after ? step + 1 : step].count
        #expect(storage.snapshot.count == count, "\(context): stray or missing files")

        let again = try Self.open(storage, step: step + 200)
        if tree == before { try Self.steps[step](again) } else { try again.makeFile("later", [4]) }
        try again.lock()
        let final = try Self.open(storage, step: step + 300)
        var expected = after
        if tree == after { expected["later"] = .file(mode: 0o644, content: [4]) }
        expectSame(try final.tree(), expected, "\(context): after the next commit")
        let report = try final.check()
        #expect(report.isClean, "\(context): \(report.storageProblems) \(report.damagedItems)")
        try final.lock()
        try checkStorageInvariants(storage)
    }
}
