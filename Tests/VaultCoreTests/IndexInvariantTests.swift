@testable import VaultCore
import DotSafeTestSupport
import Testing
import VaultCrypto
import VaultFormat
import VaultStore

/// Index version 3's derived records (docs/FORMAT.md §15.3–§15.4) follow the tree: after random
/// operations and commits, and after a reopen, the records derived from the state are exactly
/// the test's own model (names, counts, packs), pass §15.6's check, and hold no free file; and
/// the check refuses each way a record can drift from the tree, naming it.
@Suite struct IndexInvariantTests {
    /// EHK of §15.10's vector: `24835` and `39342` share a hash under it.
    static func entryHash() throws -> EntryHash { try EntryHash(key: SecretBytes(copying: (0..<32).map { UInt8($0) })) }

    struct Entry: Hashable { let folder: UInt64, name: [UInt8], id: UInt64, type: ItemRecord.ItemType }

    static func flatten(_ records: IndexRecordsV3) -> Set<Entry> {
        Set(records.entries.flatMap { folder, hashes in
            hashes.values.flatMap(\.entries).map { Entry(folder: folder, name: $0.name, id: $0.itemID, type: $0.type) }
        })
    }

    /// The records of the vault's committed state, checked, with its held files and free numbers.
    static func records(_ vault: Vault, _ hash: EntryHash) throws -> (records: IndexRecordsV3, held: Set<UInt64>, free: [UInt64]) {
        try vault.state.withLock { state in
            try state.loadWholeIndex()
            let records = try state.derivedRecords(entryHash: hash.callAsFunction)
            try state.checkRecords(records, entryHash: hash.callAsFunction)
            return (records, state.mappedFiles.union(state.indexFiles), state.writer.allocator.freeNumbers)
        }
    }

    /// On index 3 the commits keep the records from the names that changed (the tree's names
    /// journal): after each, the records written are those derived whole.
    @Test(arguments: [UInt64(3), 11, 29], [false, true])
    func randomOperationsAndCommitsKeepTheDerivedRecordsExact(seed: UInt64, indexThree: Bool) throws {
        let hash = try Self.entryHash()
        let storage = try TestVaults.storage()
        var vault = try TestVaults.open(storage, indexThree: indexThree)
        defer { try? vault.lock() }
        var generator = SeededGenerator(seed: seed)
        var model = Set<Entry>()
        var folders: [UInt64] = [Vault.rootID]
        // Few names, so that creates meet removed and renamed names again; the pair of one hash among them.
        let names = ["a", "b", "c", "24835", "39342", "long-\(String(repeating: "n", count: 200))"].map { Array($0.utf8) }
        var open: UInt64?
        var most = 0, heldOpen = 0
        for step in 0..<60 {
            for _ in 0..<4 {
                let folder = folders.randomElement(using: &generator)!, name = names.randomElement(using: &generator)!
                let here = model.first { $0.folder == folder && $0.name == name }
                switch Int.random(in: 0..<12, using: &generator) {
                case 0...3 where here == nil:
                    let id = try vault.create(.file, in: folder, named: name, mode: 0o644)
                    // Mostly pack members; now and then a chunked file.
                    let size = Int.random(in: 0..<8, using: &generator) == 0 ? 300_000 : Int.random(in: 1..<5_000, using: &generator)
                    try vault.write(id, offset: 0, bytes: TestVaults.content(size, seed: UInt64(step)))
                    model.insert(Entry(folder: folder, name: name, id: id, type: .file))
                case 4 where here == nil && folders.count < 6:
                    let id = try vault.create(.folder, in: folder, named: name, mode: 0o755)
                    folders.append(id)
                    model.insert(Entry(folder: folder, name: name, id: id, type: .folder))
                case 5...6 where here != nil && here!.type == .file:
                    // Kept open across the commit now and then: no name, so in no record.
                    if open == nil && Bool.random(using: &generator) {
                        vault.hold(here!.id)
                        open = here!.id
                        heldOpen += 1
                    }
                    try vault.remove(name, from: folder)
                    model.remove(here!)
                case 7 where here != nil && here!.type == .folder && !model.contains { $0.folder == here!.id }:
                    try vault.remove(name, from: folder, folder: true)
                    model.remove(here!)
                    folders.removeAll { $0 == here!.id }
                case 8 where here != nil:
                    let target = folders.randomElement(using: &generator)!, newName = names.randomElement(using: &generator)!
                    // Onto another name of the same file, rename(2) does nothing: not modelled.
                    guard !model.contains(where: { $0.folder == target && $0.name == newName }) else { continue }
                    guard target != here!.id, (try? vault.rename(name, in: folder, to: newName, in: target, replace: false)) != nil else { continue }
                    model.remove(here!)
                    model.insert(Entry(folder: target, name: newName, id: here!.id, type: here!.type))
                case 9 where here != nil && here!.type == .file:
                    let target = folders.randomElement(using: &generator)!, newName = names.randomElement(using: &generator)!
                    guard !model.contains(where: { $0.folder == target && $0.name == newName }) else { continue }
                    try vault.link(here!.id, into: target, named: newName)
                    model.insert(Entry(folder: target, name: newName, id: here!.id, type: .file))
                case 10...11 where here != nil && here!.type == .file:
                    // Content changes move a file between packs and chunks (the file records follow).
                    let size = [0, 900, 100_000, 270_000, 600_000].randomElement(using: &generator)!
                    if Bool.random(using: &generator) {
                        try vault.truncate(here!.id, size: UInt64(size))
                    } else {
                        try vault.write(here!.id, offset: UInt64(size), bytes: TestVaults.content(3_000, seed: UInt64(step)))
                    }
                default: continue
                }
            }
            try vault.commit()
            // A new vault whose first steps changed nothing is not written yet: no records.
            if indexThree && !vault.state.withLock({ $0.isNew }) { try IndexThreeVaultTests.expectRecordsExact(vault, "step \(step)") }
            most = max(most, model.count)
            let (records, held, free) = try Self.records(vault, hash)
            #expect(Self.flatten(records) == model, "step \(step)")
            for folder in folders {
                let inFolder = model.filter { $0.folder == folder }
                #expect(records.summaries[folder] == FolderSummary(entryCount: UInt64(inFolder.count),
                                                                    subfolderCount: UInt64(inFolder.filter { $0.type == .folder }.count)))
            }
            #expect(Set(records.summaries.keys) == Set(folders))
            // Every packed file of the model is in its pack's list; no free number is held.
            for entry in model where entry.type == .file {
                let member = vault.state.withLock { $0.tree.items[entry.id]?.packedMember }
                if let member { #expect(records.lists[FileRef(raw: member.fileNumber).number]?.itemIDs.contains(entry.id) == true) }
            }
            #expect(held.isDisjoint(with: free), "a held file is free")
            if let id = open, step % 3 == 2 {
                vault.release(id)
                open = nil
            }
            if step % 10 == 9 {
                try vault.lock()
                vault = try TestVaults.open(storage, indexThree: indexThree)
                let reopened = try Self.records(vault, hash).records
                #expect(reopened.entries == records.entries && reopened.summaries == records.summaries && reopened.lists == records.lists)
                #expect(Self.flatten(reopened) == model)
                open = nil
            }
        }
        #expect(try vault.check().isClean)
        // The walk reached a vault of some size, with files kept open without a name.
        #expect(most >= 8 && heldOpen > 0, "\(most) entries, \(heldOpen) held")
    }

    /// A vault with two folders, packed and chunked files, one name the test can move.
    static func sample() throws -> (Vault, EntryHash) {
        let vault = try TestVaults.open(try TestVaults.storage())
        let folder = try vault.create(.folder, in: Vault.rootID, named: Array("folder".utf8), mode: 0o755)
        for (i, name) in ["24835", "39342", "x"].enumerated() {
            let id = try vault.create(.file, in: i == 2 ? folder : Vault.rootID, named: Array(name.utf8), mode: 0o644)
            try vault.write(id, offset: 0, bytes: TestVaults.content(i == 1 ? 300_000 : 700, seed: UInt64(i)))
        }
        try vault.commit()
        return (vault, try entryHash())
    }

    /// Checks `change(records)` against the vault: refused, with `message` in the error.
    static func expectRefused(_ message: String, _ change: (inout IndexRecordsV3, ItemTree) throws -> Void) throws {
        let (vault, hash) = try sample()
        defer { try? vault.lock() }
        try vault.state.withLock { state in
            try state.loadWholeIndex()
            var records = try state.derivedRecords(entryHash: hash.callAsFunction)
            try state.checkRecords(records, entryHash: hash.callAsFunction)
            try change(&records, state.tree)
            do {
                try state.checkRecords(records, entryHash: hash.callAsFunction)
                Issue.record("accepted: \(message)")
            } catch VaultError.damagedIndex(let text) {
                #expect(text.contains(message), "\(text)")
            }
        }
        // Nothing of the vault changed: it reads and checks clean.
        #expect(try vault.contents(ofFolder: Vault.rootID).count == 3)
        #expect(try vault.check().isClean)
    }

    static func hashOf(_ name: String) throws -> UInt32 { try entryHash()(Array(name.utf8)) }

    @Test func aMissingEntryIsRefused() throws {
        try Self.expectRefused("has no entry") { records, _ in
            let h = try Self.hashOf("x")
            let folder = records.entries.first { $0.value[h] != nil }!.key
            records.entries[folder]![h] = nil
        }
    }

    @Test func anEntryOfAnotherTypeOrItemIsRefused() throws {
        try Self.expectRefused("of another type") { records, _ in
            let h = try Self.hashOf("x")
            let folder = records.entries.first { $0.value[h] != nil }!.key
            records.entries[folder]![h]!.entries[0].type = .symlink
        }
        try Self.expectRefused("which has no such link") { records, _ in
            let h = try Self.hashOf("x")
            let folder = records.entries.first { $0.value[h] != nil }!.key
            records.entries[folder]![h]!.entries[0].itemID += 1_000
        }
    }

    @Test func anEntryUnderAnotherHashOrOutOfOrderIsRefused() throws {
        try Self.expectRefused("not its own") { records, _ in
            let h = try Self.hashOf("x")
            let folder = records.entries.first { $0.value[h] != nil }!.key
            records.entries[folder]![h &+ 1] = records.entries[folder]![h]
            records.entries[folder]![h] = nil
        }
        try Self.expectRefused("out of order") { records, _ in
            let h = try Self.hashOf("24835")
            #expect(records.entries[Vault.rootID]![h]!.entries.count == 2, "the vector's pair shares one record")
            records.entries[Vault.rootID]![h]!.entries.reverse()
        }
    }

    @Test func entriesUnderAFileAndAWrongSummaryAreRefused() throws {
        try Self.expectRefused("which is not a folder") { records, tree in
            let file = tree.items.first { $0.value.isFile }!.key
            records.entries[file] = records.entries[Vault.rootID]
        }
        try Self.expectRefused("the summary of folder 1 counts 4 entries") { records, _ in
            records.summaries[Vault.rootID]!.entryCount += 1
        }
        try Self.expectRefused("without a summary") { records, _ in records.summaries[Vault.rootID] = nil }
    }

    @Test func bitsThatDifferFromTheHeldFilesAreRefused() throws {
        try Self.expectRefused("is held but its bit is clear") { records, _ in
            let (block, record) = records.blocks.first { $0.value.held.contains { $0 != 0 } }!
            let byte = record.held.firstIndex { $0 != 0 }!
            records.blocks[block]!.held[byte] = 0
        }
        try Self.expectRefused("but the root does not hold it") { records, _ in
            let (block, record) = records.blocks.first!
            // The last number of the block: beyond every file the sample uses.
            let index = FileBlock.numbers - 1
            #expect(!record.isHeld(index))
            records.blocks[block]!.held[index >> 3] |= 1 << (index & 7)
        }
        try Self.expectRefused("where the device owns numbers") { records, _ in records.blocks[99] = records.blocks.first!.value }
    }

    @Test func packEntriesAndListsThatDifferFromTheMembersAreRefused() throws {
        func firstPack(_ records: IndexRecordsV3) -> (UInt32, Int) {
            let block = records.blocks.first { !$0.value.packs.isEmpty }!
            return (block.key, 0)
        }
        try Self.expectRefused("live bytes") { records, _ in
            let (block, i) = firstPack(records)
            records.blocks[block]!.packs[i].liveBytes -= 1
        }
        try Self.expectRefused("holds members but has no pack entry") { records, _ in
            let (block, _) = firstPack(records)
            records.blocks[block]!.packs = []
        }
        try Self.expectRefused("member list is not its members") { records, _ in
            let n = records.lists.keys.first!
            records.lists[n]!.itemIDs.removeLast()
            if records.lists[n]!.itemIDs.isEmpty { records.lists[n]!.itemIDs = [999] }
        }
        try Self.expectRefused("which has no pack entry") { records, _ in records.lists[1_000_000] = PackMembers([5]) }
    }

    @Test func aSeventeenthNameOfOneHashIsRefusedWithNoSpace() throws {
        let vault = try TestVaults.open(try TestVaults.storage())
        defer { try? vault.lock() }
        for i in 0..<17 { _ = try vault.create(.file, in: Vault.rootID, named: Array("n\(i)".utf8), mode: 0o644) }
        try vault.commit()
        // Every name of one hash: 16 fit one record, the 17th does not.
        try vault.state.withLock { state in
            try state.loadWholeIndex()
            #expect(throws: VaultError.store(.noSpace)) { try state.derivedRecords { _ in 7 } }
        }
        try vault.remove(Array("n16".utf8), from: Vault.rootID)
        try vault.commit()
        let records = try vault.state.withLock { state in
            try state.loadWholeIndex()
            return try state.derivedRecords { _ in 7 }
        }
        #expect(records.entries[Vault.rootID]?[7]?.entries.count == 16)
        #expect(try vault.contents(ofFolder: Vault.rootID).count == 16, "nothing lost")
    }
}
