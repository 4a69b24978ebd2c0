@testable import VaultCore
import Testing
import VaultCrypto
import VaultFormat
import VaultStore

/// fsck's repair of index 3 is one commit (docs/FORMAT.md §15.7): cut at every storage mutation
/// (a process crash, a power loss, or a failed write the vault goes on from), the storage holds
/// the damage as it was (the same lines, the same tree) or the repair whole (clean, the
/// repaired tree), never a mix.
@Suite struct IndexThreeFsckCutTests {
    struct Cut: Sendable, CustomTestStringConvertible {
        /// Which of `IndexThreeFsckTests.cases`.
        let damage: Int
        let crash: CrashTests.Crash
        var testDescription: String { "\(IndexThreeFsckTests.cases[damage].name), \(crash) crash" }
    }

    /// The cycle of folders (a folder made, one moved, records written) and a wrong summary.
    static let cuts = [3, 4].flatMap { damage in CrashTests.Crash.allCases.map { Cut(damage: damage, crash: $0) } }

    /// What fsck's read-only open finds: its index lines, and the tree under the root folder.
    static func look(_ storage: SimulatedStorageFolder) throws -> (lines: [String], tree: Tree, clean: Bool) {
        let vault = try IndexThreeFsckTests.openForFsck(storage, readOnly: true)
        defer { try? vault.lock() }
        let report = try vault.check()
        return (report.indexProblems, try vault.tree(), report.isClean)
    }

    @Test(arguments: cuts)
    func aRepairCutAtEveryMutationLeavesTheDamageOrTheRepair(_ cut: Cut) throws {
        let damage = IndexThreeFsckTests.cases[cut.damage]
        let (storage, vault, known) = try IndexThreeFsckTests.committed()
        var lines: [String] = []
        try IndexThreeFsckTests.rewriteLeaf(vault, storage) { lines = try damage.craft(&$0, known) }
        try vault.lock()
        let damaged = storage.snapshot
        let before = try Self.look(storage)
        #expect(before.lines == lines)
        let uncut = CrashTests.storage(damaged)
        let repairing = try IndexThreeFsckTests.openForFsck(uncut, readOnly: false)
        try repairing.repair(try repairing.check())
        try repairing.lock()
        let after = try Self.look(uncut)
        #expect(after.clean && after.tree != before.tree || cut.damage != 3, "the cycle's folders show after the repair")

        var mutations = 0, completed = false
        while !completed {
            let copy = CrashTests.storage(damaged)
            let vault = try IndexThreeFsckTests.openForFsck(copy, readOnly: false)
            let report = try vault.check()
            completed = try cut.crash.cut(copy, afterMutations: mutations) { try vault.repair(report) }
            if cut.crash == .failure { try vault.lock() }
            let context = "\(cut.testDescription), cut after \(mutations) mutations"
            let found = try Self.look(copy)
            if found.lines.isEmpty {
                expectSame(found.tree, after.tree, "\(context): repaired")
            } else {
                #expect(found.lines == lines, "\(context)")
                expectSame(found.tree, before.tree, "\(context): as damaged")
            }
            if completed || cut.crash == .failure { #expect(found.lines.isEmpty, "\(context): the repair returned or the vault went on") }
            mutations += 1
            try #require(mutations < 1_000, "the repair never completed")
        }
        #expect(mutations > 4)
    }
}
