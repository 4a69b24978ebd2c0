@testable import VaultCore
import Testing
import VaultFormat
import VaultStore

/// Index 3's file blocks and pack member lists follow the items a commit changed (the tree's
/// journal keeps each one's files as the records held them), not every item of the vault: a
/// one-file commit looks at one item whatever the vault's size (issue 17), and the records it
/// writes are still exactly those derived from the whole tree.
@Suite struct IndexThreeFilesJournalTests {
    @Test(arguments: [1_000, 4_000])
    func aCommitLooksAtTheItemsItChanged(count: Int) throws {
        let storage = try TestVaults.storage()
        var vault = try IndexThreeNamesJournalTests.vault(count, storage)
        defer { try? vault.lock() }
        #expect(vault.statistics.fileRecordItems >= count, "a new vault's first commit looks at every item")
        func expectItems(_ expected: Int, _ context: String, _ change: () throws -> Void) throws {
            try IndexThreeNamesJournalTests.expectCommit(vault, counting: \.fileRecordItems, expected, "\(context) at \(count) files", change)
        }
        let d0 = try vault.lookup(Vault.rootID, Array("d0".utf8))
        let f1 = try vault.lookup(d0, Array("f1".utf8))
        try expectItems(1, "a new small file") { _ = try vault.makeFile("new", TestVaults.content(10)) }
        try expectItems(1, "a small file rewritten") { try vault.write(f1, offset: 0, bytes: TestVaults.content(80, seed: 9)) }
        var big: UInt64 = 0
        try expectItems(1, "a file of three chunks") { big = try vault.makeFile("big", TestVaults.content(600_000)) }
        try expectItems(1, "one chunk written again") { try vault.write(big, offset: 300_000, bytes: [1, 2, 3]) }
        try expectItems(1, "a small file grown into chunks") { try vault.truncate(f1, size: 400_000) }
        try expectItems(1, "chunks cut back into a pack member") { try vault.truncate(big, size: 500) }
        try expectItems(0, "a rename and attributes") {
            try vault.rename(Array("f2".utf8), in: d0, to: Array("f2-moved".utf8), in: Vault.rootID)
            try vault.setExtendedAttribute(big, Array("user.tag".utf8), [7])
        }
        try expectItems(1, "a second name") { try vault.link(big, into: d0, named: Array("big-again".utf8)) }
        // Open across the commit: its files leave the blocks with its last name, not its bytes.
        let held = try vault.lookup(d0, Array("f3".utf8))
        vault.hold(held)
        try expectItems(1, "a held file unnamed") { try vault.remove(Array("f3".utf8), from: d0) }
        #expect(try vault.read(held, offset: 0, count: 60) == TestVaults.content(60, seed: 3))
        // Released: gone without a record to change, but journalled as any item deleted.
        vault.release(held)
        try expectItems(3, "two files removed and the held one released") {
            try vault.remove(Array("f1".utf8), from: d0)
            try vault.remove(Array("f4".utf8), from: d0)
        }
        // A reopened vault without a sync base starts from the blocks it checked at the open.
        try vault.lock()
        vault = try TestVaults.open(storage, indexThree: true)
        try expectItems(1, "a file after reopening") { _ = try vault.makeFile("late", TestVaults.content(10), in: d0) }
        #expect(try vault.readAll("late", in: d0) == TestVaults.content(10))
        #expect(try vault.readAll("big") == TestVaults.content(500))
        #expect(try vault.check().isClean)
    }

    /// A journal that does not apply to the records (here: one of another committer) is not
    /// used: the commit derives the file records from every item, exactly.
    @Test func aJournalOfOtherRecordsIsNotUsed() throws {
        let storage = try TestVaults.storage()
        let vault = try IndexThreeNamesJournalTests.vault(300, storage)
        defer { try? vault.lock() }
        let d0 = try vault.lookup(Vault.rootID, Array("d0".utf8))
        try vault.remove(Array("f5".utf8), from: d0)
        vault.state.withLock { state in
            // The removal's entry dropped: a journal with this base would leave f5's bit set.
            state.tree.recordsJournal = ItemTree.RecordsJournal(base: 1)
        }
        let before = vault.statistics.fileRecordItems
        try vault.commit()
        #expect(vault.statistics.fileRecordItems - before >= 300, "derived from every item")
        try IndexThreeVaultTests.expectRecordsExact(vault, "after a journal of other records")
    }
}
