import VaultFormat

/// The derived records as a page holds them (docs/FORMAT.md §15.2): by key, encoded, and which
/// keys a commit must write again.
extension IndexRecordsV3 {
    /// Every record's key, in no order.
    func keys(device: UInt16) -> Set<RecordKey> {
        var keys = Set<RecordKey>()
        for (folder, hashes) in entries { for hash in hashes.keys { keys.insert(IndexKeyV3.folderEntries(folder, hash: hash).recordKey) } }
        for folder in summaries.keys { keys.insert(IndexKeyV3.folderSummary(folder).recordKey) }
        for block in blocks.keys { keys.insert(IndexKeyV3.fileBlock(device: device, block: block).recordKey) }
        for pack in lists.keys { keys.insert(IndexKeyV3.packMembers(device: device, pack: pack).recordKey) }
        return keys
    }

    /// The value of a derived record's key; nil for an item, a segment, or a key it lacks.
    func value(_ key: RecordKey, device: UInt16) -> [UInt8]? {
        switch try? IndexKeyV3(key, deviceCount: Int(UInt16.max) + 1) {
        case .folderEntries(let folder, let hash): entries[folder]?[hash]?.encode()
        case .folderSummary(let folder): summaries[folder]?.encode()
        case .fileBlock(let owner, let block) where owner == device: blocks[block]?.encode()
        case .packMembers(let owner, let pack) where owner == device: lists[pack]?.encode()
        default: nil
        }
    }

    /// The keys of folder entries and summaries that differ from `old`'s (added or changed),
    /// and those it no longer has.
    func nameChanges(from old: IndexRecordsV3) -> (changed: [RecordKey], removed: [RecordKey]) {
        var changed: [RecordKey] = [], removed: [RecordKey] = []
        for (folder, hashes) in entries {
            for (hash, record) in hashes where old.entries[folder]?[hash] != record { changed.append(IndexKeyV3.folderEntries(folder, hash: hash).recordKey) }
        }
        for (folder, hashes) in old.entries {
            for hash in hashes.keys where entries[folder]?[hash] == nil { removed.append(IndexKeyV3.folderEntries(folder, hash: hash).recordKey) }
        }
        for (folder, summary) in summaries where old.summaries[folder] != summary { changed.append(IndexKeyV3.folderSummary(folder).recordKey) }
        for folder in old.summaries.keys where summaries[folder] == nil { removed.append(IndexKeyV3.folderSummary(folder).recordKey) }
        return (changed, removed)
    }

    /// The same for the file blocks and member lists of `device`.
    func fileChanges(from old: IndexRecordsV3, device: UInt16) -> (changed: [RecordKey], removed: [RecordKey]) {
        var changed: [RecordKey] = [], removed: [RecordKey] = []
        for (block, record) in blocks where old.blocks[block] != record { changed.append(IndexKeyV3.fileBlock(device: device, block: block).recordKey) }
        for block in old.blocks.keys where blocks[block] == nil { removed.append(IndexKeyV3.fileBlock(device: device, block: block).recordKey) }
        for (pack, list) in lists where old.lists[pack] != list { changed.append(IndexKeyV3.packMembers(device: device, pack: pack).recordKey) }
        for pack in old.lists.keys where lists[pack] == nil { removed.append(IndexKeyV3.packMembers(device: device, pack: pack).recordKey) }
        return (changed, removed)
    }

    /// Adds one record read from a page of the writer device's root (`IndexPageV3.decodeRecord`
    /// has checked it by its own rules); false for a record of another kind.
    mutating func add(_ key: RecordKey, _ record: IndexPageV3.Record) -> Bool {
        switch (try? IndexKeyV3(key, deviceCount: Int(UInt16.max) + 1), record) {
        case (.folderEntries(let folder, let hash), .folderEntries(let value)): entries[folder, default: [:]][hash] = value
        case (.folderSummary(let folder), .folderSummary(let value)): summaries[folder] = value
        case (.fileBlock(_, let block), .fileBlock(let value)): blocks[block] = value
        case (.packMembers(_, let pack), .packMembers(let value)): lists[pack] = value
        default: return false
        }
        return true
    }
}
