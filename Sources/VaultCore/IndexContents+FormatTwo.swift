import VaultCrypto
import VaultFormat

/// Reading a format-2 index (docs/FORMAT.md §13.5–§13.8): the pages below the root's top refs,
/// each opened with the key its parent records, down to the leaves and their records.
extension IndexContents {
    /// Nothing read yet: leaves loaded after the open (`VaultState.fault`) go into one.
    init() {}

    /// `pageBody` opens the page at a ref (its key already in the arena) expected at a level;
    /// `keepKey` moves a key (page, chunk, member, format-1 item key) into locked memory and
    /// wipes the array.
    /// `indexThree`: the root as version 3 and its entry hash; its leaves hold §15.2's records.
    /// `keepsUnreached`: items nothing reaches stay, for fsck to report (`buildFolders`).
    init(rootV2 root: IndexRootV2, indexThree: (root: IndexRootV3, hash: EntryHash)? = nil, keepsUnreached: Bool = false, pageBody: (StoredRef, UInt8) throws -> [UInt8],
         keepKey: (inout [UInt8]) throws -> SecretArena.Slot?) throws {
        var segments: [(key: RecordKey, entries: [(index: Int, ref: StoredRef)])] = []
        for leaf in try walk(root, pageBody: pageBody, keepKey: keepKey) {
            try loadLeaf(leaf, of: root, indexThree: indexThree, pageBody: pageBody, keepKey: keepKey, segments: &segments)
        }
        try addSegments(segments, format: .two)
        try buildFolders(keepsUnreached: keepsUnreached)
        try checkFileNumbers(pages: pages.map(\.ref.fileNumber) + interiorPages.map(\.fileNumber), special: root.specialFiles.map(\.file.raw),
                             isOwned: { root.fileIsValid(FileRef(raw: $0)) })
    }

    /// A leaf as its parent lists it: its page (key kept), its first key, and the key its
    /// records must stay below (the next leaf's first; none for the last).
    struct ListedLeaf {
        let ref: StoredRef
        let firstKey: RecordKey
        let upper: RecordKey?
    }

    /// Reads the interior pages below the root's top refs, each checked against its parent's
    /// range, and returns the leaves they list, in key order, none read.
    mutating func walk(_ root: IndexRootV2, pageBody: (StoredRef, UInt8) throws -> [UInt8],
                       keepKey: (inout [UInt8]) throws -> SecretArena.Slot?) throws -> [ListedLeaf] {
        var leaves: [ListedLeaf] = []
        func visit(_ refs: [PageRef], level: UInt8, upper: RecordKey?) throws {
            for (i, ref) in refs.enumerated() {
                guard root.fileIsValid(ref.file) else { throw VaultError.damagedIndex("index page in file \(ref.file), which is not the vault's") }
                var pageKey = ref.pageKey
                let slot = try keepKey(&pageKey)
                pageKey.wipeStorage()
                guard let slot else { throw VaultError.damagedIndex("a page key was not kept") }
                let stored = StoredRef(fileNumber: ref.file.raw, key: slot)
                let next = i + 1 < refs.count ? refs[i + 1].firstKey : upper
                guard level > 0 else {
                    leaves.append(ListedLeaf(ref: stored, firstKey: ref.firstKey, upper: next))
                    continue
                }
                let body = try pageBody(stored, level)
                defer { body.wipeStorage() }
                guard case .interior(let children) = try IndexPageV2.decode(body[...], level: level) else {
                    throw VaultError.damagedIndex("index page \(ref.file) is not an interior page")
                }
                guard children[0].firstKey >= ref.firstKey, next.map({ children[children.count - 1].firstKey < $0 }) ?? true else {
                    throw VaultError.damagedIndex("index page \(ref.file) outside its parent's range")
                }
                interiorPages.append(stored)
                if root.topLevel == 1 { parents.append((stored, children.count)) }
                try visit(children, level: level - 1, upper: next)
            }
        }
        try visit(root.top, level: root.topLevel, upper: nil)
        return leaves
    }

    /// Reads one leaf: its records checked against its range and by their own rules (§15.6),
    /// index 3's derived records taken, its items and segments added (`addLeaf`).
    mutating func loadLeaf(_ leaf: ListedLeaf, of root: IndexRootV2, indexThree: (root: IndexRootV3, hash: EntryHash)?,
                           pageBody: (StoredRef, UInt8) throws -> [UInt8], keepKey: (inout [UInt8]) throws -> SecretArena.Slot?,
                           segments: inout [(key: RecordKey, entries: [(index: Int, ref: StoredRef)])]) throws {
        let body = try pageBody(leaf.ref, 0)
        defer { body.wipeStorage() }
        let file = FileRef(raw: leaf.ref.fileNumber)
        guard case .leaf(let records) = try IndexPageV2.decode(body[...], level: 0) else {
            throw VaultError.damagedIndex("index page \(file) is not a leaf")
        }
        defer { for record in records { record.value.wipeStorage() } }
        guard records[0].key >= leaf.firstKey, leaf.upper.map({ records[records.count - 1].key < $0 }) ?? true else {
            throw VaultError.damagedIndex("index page \(file) outside its parent's range")
        }
        let items = try indexThree.map { try takeDerived(records, file, $0.root, $0.hash) } ?? records
        // Each device hands out IDs under its own prefix, below its counter (§13.4).
        let nextIDs = Dictionary(root.devices.map { (UInt64($0.itemPrefix), $0.nextItemID) }, uniquingKeysWith: max)
        try addLeaf(leaf.ref, items, keys: records.map(\.key), format: .two, isValidID: { id in
            id == Format.rootItemID || nextIDs[id >> 32].map { id < $0 } ?? false
        }, keepKey: keepKey, segments: &segments)
    }

    /// An index-3 leaf (§15.5): its records checked by their own rules (§15.6) and the derived
    /// ones taken (the writer device's decoded, other devices' kept as read); returns its items
    /// and segments.
    private mutating func takeDerived(_ records: [(key: RecordKey, value: [UInt8])], _ file: FileRef, _ root: IndexRootV3,
                                      _ hash: EntryHash) throws -> [(key: RecordKey, value: [UInt8])] {
        var items: [(key: RecordKey, value: [UInt8])] = []
        for record in records {
            let decoded: IndexPageV3.Record
            do {
                decoded = try IndexPageV3.decodeRecord(record.key, record.value, root: root, entryHash: hash.callAsFunction)
            } catch let error as FormatError {
                throw VaultError.damagedIndex("index page \(file): \(error)")
            }
            switch decoded {
            case .item, .segment: items.append(record)
            case .fileBlock, .packMembers:
                if UInt16(truncatingIfNeeded: record.key.itemID >> 48) == root.root.writerDevice {
                    _ = derived.add(record.key, decoded)
                } else {
                    foreignRecords[record.key] = record.value.withUnsafeBufferPointer { Array($0) }
                }
            case .folderEntries, .folderSummary: _ = derived.add(record.key, decoded)
            }
        }
        return items
    }
}
