import VaultFormat

/// The records of index version 3 that follow from the item tree (docs/FORMAT.md §15.3–§15.4):
/// each folder's entries by name hash and its summary, and the writer device's file blocks
/// (held bits, pack entries) and pack member lists. The entries and summaries follow the names
/// a commit changed (`updateNames`), the file records the files of the items it changed
/// (`followingFiles`), or both are derived whole; `check` holds records read or derived against the tree by
/// §15.6's rules, both directions, so that records that drifted from the links or the references
/// never go unnoticed.
struct IndexRecordsV3: Equatable {
    /// Folder → hash → the names of that hash, in name order.
    var entries: [UInt64: [UInt32: FolderEntries]] = [:]
    var summaries: [UInt64: FolderSummary] = [:]
    /// File block k of the writer device (its numbers 4096k … 4096k + 4095).
    var blocks: [UInt32: FileBlock] = [:]
    /// The member list of the writer device's pack n (n its number within the device).
    var lists: [UInt64: PackMembers] = [:]

    typealias EntryHash = ([UInt8]) throws -> UInt32

    /// The writer device's numbers, within the device: what its file blocks describe.
    struct Numbers {
        let device: UInt16
        /// Slots and covers: below it, never held.
        let firstData: UInt64
        let groups: [GroupRange]

        init(_ allocator: FileAllocator) {
            device = FileRef(raw: allocator.base).device
            firstData = allocator.firstDataNumber - allocator.base
            groups = allocator.entryGroups
        }

        func owns(_ number: UInt64) -> Bool {
            let group = number / UInt64(Format.groupSize)
            return groups.contains { $0.first <= group && group < $0.end }
        }

        /// A number a bit may be set on: owned, not a slot or cover.
        func isData(_ number: UInt64) -> Bool { number >= firstData && owns(number) }

        /// The blocks that hold an owned number: exactly those have a record (§15.4).
        var blocks: Set<UInt32> {
            var blocks = Set<UInt32>()
            for range in groups {
                let first = range.first * UInt64(Format.groupSize), end = range.end * UInt64(Format.groupSize)
                for block in first / IndexKeyV3.numbersPerBlock ... (end - 1) / IndexKeyV3.numbersPerBlock { blocks.insert(UInt32(block)) }
            }
            return blocks
        }

        /// The device's own numbers among raw FileRefs.
        func own(_ raw: Set<UInt64>) -> Set<UInt64> {
            Set(raw.lazy.map(FileRef.init(raw:)).filter { $0.device == device }.map(\.number))
        }
    }

    /// Per pack of the device, by number: its members' items, live bytes and end.
    typealias PackContents = [UInt64: (items: [UInt64], live: Int, end: Int)]

    /// The chunks and members of the items the root records, and what the device's packs hold
    /// by them: one pass over the items, which a commit makes once.
    static func itemFilesAndPacks(_ tree: ItemTree, _ numbers: Numbers) -> (files: Set<UInt64>, packs: PackContents) {
        var files = Set<UInt64>(), packs = PackContents()
        for (id, item) in tree.allItems where tree.isRecorded(id) {
            for ref in item.chunks.values { files.insert(ref.fileNumber) }
            guard let member = item.packedMember else { continue }
            files.insert(member.fileNumber)
            let file = FileRef(raw: member.fileNumber)
            guard file.device == numbers.device else { continue }
            // In place: a copy taken out and put back would copy the pack's item list each time.
            func add(_ pack: inout (items: [UInt64], live: Int, end: Int)) {
                pack.items.append(id)
                pack.live += Int(member.sealedLength)
                pack.end = max(pack.end, Int(member.offset) + Int(member.sealedLength))
            }
            add(&packs[file.number, default: ([], 0, 0)])
        }
        return (files, packs.mapValues { ($0.items.sorted(), $0.live, $0.end) })
    }

    /// The records of a tree whose root holds the raw FileRefs `held` (§15.4: what it references
    /// and what its sync base pins). A 17th name of one hash in a folder is refused (`ENOSPC`).
    /// `packs`: what the device's packs hold (`itemFilesAndPacks`).
    static func derive(_ tree: ItemTree, numbers: Numbers, held: Set<UInt64>, packs: PackContents,
                       entryHash: EntryHash) throws -> IndexRecordsV3 {
        var records = IndexRecordsV3()
        try records.deriveNames(tree, entryHash: entryHash)
        (records.blocks, records.lists) = try fileRecords(packs, numbers: numbers, held: held)
        return records
    }

    /// Every folder's entries and summary from the items' links; unchanged if it throws.
    mutating func deriveNames(_ tree: ItemTree, entryHash: EntryHash) throws {
        var derived = IndexRecordsV3()
        var byHash: [UInt64: [UInt32: [FolderEntries.Entry]]] = [:]
        for (id, item) in tree.allItems where tree.isRecorded(id) {
            if item.isFolder { derived.summaries[id] = FolderSummary(entryCount: 0, subfolderCount: 0) }
            for link in item.record.links {
                byHash[link.parentID, default: [:]][try entryHash(link.name), default: []]
                    .append(FolderEntries.Entry(name: link.name, itemID: id, type: item.record.type))
            }
        }
        for (folder, hashes) in byHash {
            for (hash, list) in hashes {
                guard list.count <= FolderEntries.maxCount else { throw VaultError.store(.noSpace) }
                derived.entries[folder, default: [:]][hash] = FolderEntries(list.sorted { $0.name.lexicographicallyPrecedes($1.name) })
            }
            derived.summaries[folder] = derived.summary(of: folder)
        }
        entries = derived.entries
        summaries = derived.summaries
    }

    /// The folder entries and summaries after the names and items of `journal` changed, the
    /// others kept: each journalled name's list takes the name's item now, if any, and each
    /// folder that gained or lost a name, or was made or unnamed, is counted again. Unchanged
    /// if it throws; applying a journal twice gives the same records. Returns the keys to write
    /// again and those to remove.
    mutating func updateNames(_ tree: ItemTree, journal: ItemTree.RecordsJournal,
                              entryHash: EntryHash) throws -> (changed: [RecordKey], removed: [RecordKey]) {
        struct Bucket: Hashable { let folder: UInt64, hash: UInt32 }
        var lists: [Bucket: [FolderEntries.Entry]] = [:]
        for link in journal.links {
            let bucket = Bucket(folder: link.parentID, hash: try entryHash(link.name))
            var list = lists[bucket] ?? entries[bucket.folder]?[bucket.hash]?.entries ?? []
            list.removeAll { $0.name == link.name }
            if tree.isRecorded(link.parentID), let id = tree.children[link.parentID]?[link.name], let item = tree.items[id] {
                let at = list.firstIndex { link.name.lexicographicallyPrecedes($0.name) } ?? list.count
                list.insert(FolderEntries.Entry(name: link.name, itemID: id, type: item.record.type), at: at)
            }
            guard list.count <= FolderEntries.maxCount else { throw VaultError.store(.noSpace) }
            lists[bucket] = list
        }
        var changed = Set<RecordKey>(), removed = Set<RecordKey>()
        var folders = journal.items
        for (bucket, list) in lists {
            folders.insert(bucket.folder)
            let record = list.isEmpty ? nil : FolderEntries(list)
            guard record != entries[bucket.folder]?[bucket.hash] else { continue }
            entries[bucket.folder, default: [:]][bucket.hash] = record
            if entries[bucket.folder]?.isEmpty == true { entries[bucket.folder] = nil }
            let key = IndexKeyV3.folderEntries(bucket.folder, hash: bucket.hash).recordKey
            if record == nil { removed.insert(key) } else { changed.insert(key) }
        }
        for folder in folders {
            let isFolder = tree.isRecorded(folder) && tree.items[folder]?.isFolder == true
            let record = isFolder ? summary(of: folder) : nil
            guard record != summaries[folder] else { continue }
            summaries[folder] = record
            let key = IndexKeyV3.folderSummary(folder).recordKey
            if record == nil { removed.insert(key) } else { changed.insert(key) }
        }
        return (changed.sorted(), removed.sorted())
    }

    /// A folder's counts from its entries.
    private func summary(of folder: UInt64) -> FolderSummary {
        var count: UInt64 = 0, subfolders: UInt64 = 0
        for record in (entries[folder] ?? [:]).values {
            count += UInt64(record.entries.count)
            subfolders += UInt64(record.entries.lazy.filter { $0.type == .folder }.count)
        }
        return FolderSummary(entryCount: count, subfolderCount: subfolders)
    }

    /// The writer device's file blocks and pack member lists for a root that holds `held`.
    static func fileRecords(_ packs: PackContents, numbers: Numbers,
                            held: Set<UInt64>) throws -> (blocks: [UInt32: FileBlock], lists: [UInt64: PackMembers]) {
        var blocks: [UInt32: FileBlock] = [:], lists: [UInt64: PackMembers] = [:]
        for block in numbers.blocks { blocks[block] = FileBlock(held: [UInt8](repeating: 0, count: FileBlock.heldSize), packs: []) }
        for number in numbers.own(held) where numbers.isData(number) {
            let (block, index) = (UInt32(number / IndexKeyV3.numbersPerBlock), Int(number % IndexKeyV3.numbersPerBlock))
            blocks[block]!.held[index >> 3] |= 1 << (index & 7)
        }
        for (number, pack) in packs.sorted(by: { $0.key < $1.key }) {
            let (block, index) = (UInt32(number / IndexKeyV3.numbersPerBlock), Int(number % IndexKeyV3.numbersPerBlock))
            guard blocks[block]?.isHeld(index) == true else {
                throw VaultError.damagedIndex("pack \(FileRef(device: numbers.device, number: number)) holds members but is not held")
            }
            blocks[block]!.packs.append(FileBlock.Pack(index: UInt16(index), liveBytes: UInt32(pack.live), reservedEnd: UInt32(pack.end)))
            lists[number] = PackMembers(pack.items)
        }
        return (blocks, lists)
    }

    /// §15.6's rules of these records against the tree whose root holds `held`: every entry a
    /// link of its item with its type and every link an entry, each folder's summary its counts,
    /// the bits the held set, the pack entries and lists the members. Throws `damagedIndex`
    /// naming the first record that breaks one.
    func check(against tree: ItemTree, numbers: Numbers, held: Set<UInt64>, packs: PackContents, entryHash: EntryHash) throws {
        func fail(_ message: String) -> VaultError { .damagedIndex("index 3: \(message)") }
        func text(_ name: [UInt8]) -> String { String(decoding: name, as: UTF8.self) }
        var entryCount = 0
        for (folder, hashes) in entries {
            guard tree.isRecorded(folder), tree.items[folder]?.isFolder == true else { throw fail("entries under item \(folder), which is not a folder") }
            for (hash, record) in hashes {
                guard (1...FolderEntries.maxCount).contains(record.entries.count) else { throw fail("entries \(folder):\(hash) hold \(record.entries.count) names") }
                for (i, entry) in record.entries.enumerated() {
                    guard try entryHash(entry.name) == hash else { throw fail("entry \(folder)/\(text(entry.name)) under hash \(hash), not its own") }
                    guard i == 0 || record.entries[i - 1].name.lexicographicallyPrecedes(entry.name) else { throw fail("entries \(folder):\(hash) out of order") }
                    guard tree.isRecorded(entry.itemID), let item = tree.items[entry.itemID],
                          item.record.links.contains(ItemRecord.Link(parentID: folder, name: entry.name)) else {
                        throw fail("entry \(folder)/\(text(entry.name)) names item \(entry.itemID), which has no such link")
                    }
                    guard item.record.type == entry.type else { throw fail("entry \(folder)/\(text(entry.name)) of another type than item \(entry.itemID)") }
                }
                entryCount += record.entries.count
            }
        }
        // Each entry is a link of its item, and none is there twice (in order within a hash,
        // under its own hash, under one folder): as many entries as links means every link has
        // one. Only when they differ is the missing one looked for, hashing each name again.
        var linkCount = 0
        for (id, item) in tree.allItems where tree.isRecorded(id) {
            linkCount += item.record.links.count
            guard item.isFolder == (summaries[id] != nil) else {
                throw fail(item.isFolder ? "folder \(id) without a summary" : "a summary under item \(id), which is not a folder")
            }
        }
        if linkCount != entryCount {
            for (id, item) in tree.allItems where tree.isRecorded(id) {
                for link in item.record.links {
                    let listed = entries[link.parentID]?[try entryHash(link.name)]?.entries.contains { $0.name == link.name && $0.itemID == id } == true
                    guard listed else { throw fail("item \(id)'s link \(link.parentID)/\(text(link.name)) has no entry") }
                }
            }
            throw fail("\(entryCount) entries for \(linkCount) links")
        }
        for (folder, summary) in summaries {
            guard tree.isRecorded(folder) else { throw fail("a summary under item \(folder), which is not in the index") }
            let listed = entries[folder]?.values.flatMap(\.entries) ?? []
            let counted = FolderSummary(entryCount: UInt64(listed.count), subfolderCount: UInt64(listed.filter { $0.type == .folder }.count))
            guard summary == counted else {
                throw fail("the summary of folder \(folder) counts \(summary.entryCount) entries, \(summary.subfolderCount) folders; it has \(counted.entryCount), \(counted.subfolderCount)")
            }
        }
        try checkFiles(numbers, held, packs)
    }

    private func checkFiles(_ numbers: Numbers, _ held: Set<UInt64>, _ packs: PackContents) throws {
        func fail(_ message: String) -> VaultError { .damagedIndex("index 3: \(message)") }
        let own = numbers.own(held)
        // An empty block beyond them is what an earlier release left (`FileBlock.validate`).
        let owned = numbers.blocks
        guard owned.isSubset(of: blocks.keys), blocks.allSatisfy({ owned.contains($0.key) || $0.value.isEmpty }) else {
            throw fail("file blocks \(blocks.keys.sorted()) where the device owns numbers in \(numbers.blocks.sorted())")
        }
        for number in own where numbers.isData(number) {
            guard blocks[UInt32(number / IndexKeyV3.numbersPerBlock)]?.isHeld(Int(number % IndexKeyV3.numbersPerBlock)) == true else {
                throw fail("file \(number) is held but its bit is clear")
            }
        }
        var entered = Set<UInt64>()
        for (block, record) in blocks {
            let first = UInt64(block) * IndexKeyV3.numbersPerBlock
            for index in 0..<FileBlock.numbers where record.isHeld(index) {
                guard own.contains(first + UInt64(index)) else { throw fail("file \(first + UInt64(index))'s bit is set, but the root does not hold it") }
            }
            for entry in record.packs {
                let number = first + UInt64(entry.index)
                entered.insert(number)
                guard let pack = packs[number] else { throw fail("a pack entry for file \(number), which holds no member") }
                guard Int(entry.liveBytes) == pack.live, Int(entry.reservedEnd) == pack.end else {
                    throw fail("pack \(number)'s entry says \(entry.liveBytes) live bytes to \(entry.reservedEnd); its members take \(pack.live) to \(pack.end)")
                }
                guard lists[number]?.itemIDs == pack.items else { throw fail("pack \(number)'s member list is not its members \(pack.items)") }
            }
        }
        if let number = Set(packs.keys).subtracting(entered).min() { throw fail("pack \(number) holds members but has no pack entry") }
        if let number = Set(lists.keys).subtracting(entered).min() { throw fail("a member list for file \(number), which has no pack entry") }
    }
}

extension ItemTree {
    /// Whether a root records the item: the root folder, and items with a name (an unlinked
    /// file still open lives in memory only).
    func isRecorded(_ id: UInt64) -> Bool {
        guard let item = items[id] else { return false }
        return id == Format.rootItemID || !item.record.links.isEmpty
    }
}
