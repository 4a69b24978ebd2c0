import VaultCrypto
import VaultFormat

/// Index version 3 in the committer (docs/FORMAT.md §15): the entry hash key, the derived
/// records that the page table's keys of their kinds stand for, and other devices' records,
/// kept as read (nobody but their device uses them, §15.4).
struct IndexThree {
    /// EHK (§15.3): made with the vault, kept in tag 5 of every root.
    let entryHashKey: SecretBytes
    let entryHash: EntryHash
    var records = IndexRecordsV3()
    var foreign: [RecordKey: [UInt8]] = [:]
    /// Drawn each time the derived records follow a tree: a journal started then applies to
    /// these records and no others (a merge, a restored state, another committer).
    var journalToken: UInt64?
    /// What the file blocks were last derived with besides the items; nil until a commit
    /// derives them, or an open has checked them against every item and pin.
    var filesBasis: IndexRecordsV3.FilesBasis?

    init(entryHashKey: SecretBytes) throws {
        self.entryHashKey = entryHashKey
        entryHash = try EntryHash(key: entryHashKey)
    }

    func hash(_ name: [UInt8]) throws -> UInt32 { try entryHash(name) }

    /// Evicted folders' entries and summaries (their leaves unloaded, clean: as on disk).
    mutating func forgetFolders(_ ids: [UInt64]) {
        for id in ids {
            records.entries[id] = nil
            records.summaries[id] = nil
        }
    }

    /// The derived records of leaves loaded after the open: keys none of these have (a key in
    /// memory is in a loaded leaf), so a journal started before still applies.
    mutating func adoptLoaded(_ loaded: IndexRecordsV3, foreign loadedForeign: [RecordKey: [UInt8]]) {
        for (folder, hashes) in loaded.entries { records.entries[folder, default: [:]].merge(hashes) { current, _ in current } }
        records.summaries.merge(loaded.summaries) { current, _ in current }
        records.blocks.merge(loaded.blocks) { current, _ in current }
        records.lists.merge(loaded.lists) { current, _ in current }
        foreign.merge(loadedForeign) { current, _ in current }
    }

    /// `journal` if it applies to these records.
    func applicable(_ journal: ItemTree.RecordsJournal?) -> ItemTree.RecordsJournal? {
        guard let journal, journal.base == journalToken else { return nil }
        return journal
    }

    /// A journal for a tree whose names and files these records hold.
    mutating func startJournal() -> ItemTree.RecordsJournal {
        let token = UInt64.random(in: 0 ... .max)
        journalToken = token
        return ItemTree.RecordsJournal(base: token)
    }

    /// A derived or foreign record's value, in storage of its own (the writer wipes what it encodes).
    func value(_ key: RecordKey, device: UInt16) -> [UInt8]? {
        if let value = foreign[key] { return value.withUnsafeBufferPointer { Array($0) } }
        return records.value(key, device: device)
    }
}

extension Committer {
    /// The version byte of the index's envelopes: 3 for index version 3 (§15.1).
    var indexEnvelopeVersion: UInt8 { indexThree == nil ? StorageFormat.two.envelopeVersion : IndexRootV3.envelopeVersion }
}
