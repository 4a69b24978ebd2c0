@testable import VaultCore
import Testing
import VaultFormat
import VaultStore

/// Index 3's folder entries follow the names that changed (the tree's names journal), not every
/// name of the vault: a commit hashes the names it adds or removes whatever the vault's size
/// (issue 17: a one-file commit independent of the size), and the records it writes are still
/// exactly those derived from the whole tree.
@Suite struct IndexThreeNamesJournalTests {
    /// A committed index-3 vault of `count` small files, 500 to a folder.
    static func vault(_ count: Int, _ storage: SimulatedStorageFolder) throws -> Vault {
        let vault = try TestVaults.open(storage, indexThree: true)
        var folder = Vault.rootID
        for i in 0..<count {
            if i % 500 == 0 { folder = try vault.create(.folder, in: Vault.rootID, named: Array("d\(i / 500)".utf8), mode: 0o755) }
            _ = try vault.makeFile("f\(i)", TestVaults.content(60, seed: UInt64(i)), in: folder)
        }
        try vault.commit()
        return vault
    }

    /// Runs `change` and a commit: `statistic` moved by `expected`, the records exact after.
    static func expectCommit(_ vault: Vault, counting statistic: KeyPath<VaultStatistics, Int>, _ expected: Int,
                             _ context: String, _ change: () throws -> Void) throws {
        let before = vault.statistics[keyPath: statistic]
        try change()
        try vault.commit()
        #expect(vault.statistics[keyPath: statistic] - before == expected, "\(context)")
        try IndexThreeVaultTests.expectRecordsExact(vault, context)
    }

    static func names(_ vault: Vault, _ folder: UInt64) throws -> [String: UInt64] {
        Dictionary(uniqueKeysWithValues: try vault.contents(ofFolder: folder).map { (String(decoding: $0.name, as: UTF8.self), $0.id) })
    }

    @Test(arguments: [1_000, 4_000])
    func aCommitHashesTheNamesItChanged(count: Int) throws {
        let storage = try TestVaults.storage()
        var vault = try Self.vault(count, storage)
        defer { try? vault.lock() }
        #expect(vault.statistics.entryHashes >= count, "a new vault's first commit derives every entry")
        func expectHashes(_ expected: Int, _ context: String, _ change: () throws -> Void) throws {
            try Self.expectCommit(vault, counting: \.entryHashes, expected, "\(context) at \(count) files", change)
        }
        let d0 = try vault.lookup(Vault.rootID, Array("d0".utf8))
        var box: UInt64 = 0
        try expectHashes(1, "a new file") { _ = try vault.makeFile("new", TestVaults.content(10)) }
        try expectHashes(2, "a folder and a file in it") {
            box = try vault.create(.folder, in: Vault.rootID, named: Array("box".utf8), mode: 0o755)
            _ = try vault.makeFile("inner", TestVaults.content(10), in: box)
        }
        try expectHashes(2, "a rename into another folder") {
            try vault.rename(Array("new".utf8), in: Vault.rootID, to: Array("moved".utf8), in: box)
        }
        try expectHashes(1, "a second name") {
            try vault.link(try vault.lookup(d0, Array("f1".utf8)), into: box, named: Array("f1-again".utf8))
        }
        try expectHashes(0, "a content change and attributes") {
            let id = try vault.lookup(d0, Array("f2".utf8))
            try vault.write(id, offset: 5, bytes: [1, 2, 3])
            try vault.setExtendedAttribute(id, Array("user.tag".utf8), [7])
        }
        // Open across the commit: its name goes, its item stays in memory only.
        let held = try vault.lookup(box, Array("inner".utf8))
        vault.hold(held)
        try expectHashes(1, "a held file unnamed") { try vault.remove(Array("inner".utf8), from: box) }
        vault.release(held)
        try expectHashes(3, "a folder emptied and removed") {
            try vault.remove(Array("moved".utf8), from: box)
            try vault.remove(Array("f1-again".utf8), from: box)
            try vault.remove(Array("box".utf8), from: Vault.rootID, folder: true)
        }
        // A reopened vault's first commit starts from the records it read.
        try vault.lock()
        vault = try TestVaults.open(storage, indexThree: true)
        try expectHashes(1, "a file after reopening") { _ = try vault.makeFile("late", TestVaults.content(10), in: d0) }
        #expect(try Self.names(vault, Vault.rootID).keys.sorted() == (0..<(count + 499) / 500).map { "d\($0)" }.sorted())
        #expect(try Self.names(vault, d0).count == 501)
    }

    /// The changes of the cut test: a new name, a move out of a folder, a removal.
    static func change(_ vault: Vault) throws -> UInt64 {
        let d0 = try vault.lookup(Vault.rootID, Array("d0".utf8))
        _ = try vault.makeFile("new", TestVaults.content(10))
        try vault.rename(Array("f3".utf8), in: d0, to: Array("f3-moved".utf8), in: Vault.rootID)
        try vault.remove(Array("f4".utf8), from: d0)
        return d0
    }

    /// A commit cut at each of its storage changes (after it took the names, or before), the
    /// session going on: the next commit writes them, and a reopen finds every name.
    @Test func aFailedCommitLeavesItsNamesToTheNext() throws {
        var cuts = 0
        for cut in 0..<64 {
            let storage = try TestVaults.storage()
            var vault = try Self.vault(300, storage)
            let d0 = try Self.change(vault)
            storage.crash(afterMutations: cut)
            var completed = true
            do {
                try vault.commit()
            } catch {
                #expect("\(error)".contains("simulated crash"), "cut \(cut): \(error)")
                completed = false
            }
            storage.processCrash()
            if !completed {
                cuts += 1
                try vault.commit()
            }
            try IndexThreeVaultTests.expectRecordsExact(vault, "cut \(cut)")
            try vault.lock()
            vault = try TestVaults.open(storage, indexThree: true)
            try IndexThreeVaultTests.expectRecordsExact(vault, "cut \(cut), reopened")
            let root = try Self.names(vault, Vault.rootID), inD0 = try Self.names(vault, d0)
            #expect(root["new"] != nil && root["f3-moved"] != nil, "cut \(cut)")
            #expect(inD0.count == 298 && inD0["f3"] == nil && inD0["f4"] == nil, "cut \(cut)")
            #expect(try vault.readAll("f3-moved") == TestVaults.content(60, seed: 3), "cut \(cut)")
            try vault.lock()
            if completed { break }
        }
        #expect(cuts >= 4, "a commit of data, pages and a root: cut at \(cuts) changes")
    }

    /// A 17th name of one hash is refused (`ENOSPC`) by the journal's update as by a whole
    /// derivation, and leaves the records as they were (a later commit applies the journal again).
    @Test func aSeventeenthNameLeavesTheRecordsAsTheyWere() throws {
        let vault = try TestVaults.open(try TestVaults.storage(), indexThree: true)
        defer { try? vault.lock() }
        for i in 0..<17 { _ = try vault.create(.file, in: Vault.rootID, named: Array("n\(i)".utf8), mode: 0o644) }
        try vault.state.withLock { state in
            var records = IndexRecordsV3()
            var journal = ItemTree.RecordsJournal(base: 0)
            for i in 0..<16 { journal.links.insert(ItemRecord.Link(parentID: Vault.rootID, name: Array("n\(i)".utf8))) }
            journal.items.insert(Vault.rootID)
            _ = try records.updateNames(state.tree, journal: journal, entryHash: { _ in 7 })
            #expect(records.entries[Vault.rootID]?[7]?.entries.count == 16)
            let before = records
            journal.links.insert(ItemRecord.Link(parentID: Vault.rootID, name: Array("n16".utf8)))
            #expect(throws: VaultError.store(.noSpace)) { try records.updateNames(state.tree, journal: journal, entryHash: { _ in 7 }) }
            #expect(records == before, "nothing of the refused update kept")
        }
    }
}
