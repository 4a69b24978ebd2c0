import VaultCrypto
import VaultFormat

/// Reading a format-2 index (docs/FORMAT.md §13.5–§13.8): the pages below the root's top refs,
/// each opened with the key its parent records, down to the leaves and their records.
extension IndexContents {
    /// `pageBody` opens the page at a ref (its key already in the arena) expected at a level;
    /// `keepKey` moves a key (page, chunk, member, format-1 item key) into locked memory and
    /// wipes the array.
    /// `indexThree`: the root as version 3 and its entry hash; its leaves hold §15.2's records.
    /// `keepsUnreached`: items nothing reaches stay, for fsck to report (`buildFolders`).
    init(rootV2 root: IndexRootV2, indexThree: (root: IndexRootV3, hash: EntryHash)? = nil, keepsUnreached: Bool = false, pageBody: (StoredRef, UInt8) throws -> [UInt8],
         keepKey: (inout [UInt8]) throws -> SecretArena.Slot?) throws {
        // Each device hands out IDs under its own prefix, below its counter (§13.4).
        let nextIDs = Dictionary(root.devices.map { (UInt64($0.itemPrefix), $0.nextItemID) }, uniquingKeysWith: max)
        var segments: [(key: RecordKey, entries: [(index: Int, ref: StoredRef)])] = []
        func visit(_ refs: [PageRef], level: UInt8, upper: RecordKey?) throws {
            for (i, ref) in refs.enumerated() {
                guard root.fileIsValid(ref.file) else { throw VaultError.damagedIndex("index page in file \(ref.file), which is not the vault's") }
                var pageKey = ref.pageKey
                let slot = try keepKey(&pageKey)
                pageKey.wipeStorage()
                guard let slot else { throw VaultError.damagedIndex("a page key was not kept") }
                let stored = StoredRef(fileNumber: ref.file.raw, key: slot)
                let body = try pageBody(stored, level)
                defer { body.wipeStorage() }
                let next = i + 1 < refs.count ? refs[i + 1].firstKey : upper
                func inRange(_ first: RecordKey, _ last: RecordKey) -> Bool { first >= ref.firstKey && next.map { last < $0 } ?? true }
                switch try IndexPageV2.decode(body[...], level: level) {
                case .interior(let children):
                    guard inRange(children[0].firstKey, children[children.count - 1].firstKey) else {
                        throw VaultError.damagedIndex("index page \(ref.file) outside its parent's range")
                    }
                    interiorPages.append(stored)
                    if root.topLevel == 1 { parents.append((stored, children.count)) }
                    try visit(children, level: level - 1, upper: next)
                case .leaf(let records):
                    defer { for record in records { record.value.wipeStorage() } }
                    guard inRange(records[0].key, records[records.count - 1].key) else {
                        throw VaultError.damagedIndex("index page \(ref.file) outside its parent's range")
                    }
                    let items = try indexThree.map { try takeDerived(records, ref.file, $0.root, $0.hash) } ?? records
                    try addLeaf(stored, items, keys: records.map(\.key), format: .two, isValidID: { id in
                        id == Format.rootItemID || nextIDs[id >> 32].map { id < $0 } ?? false
                    }, keepKey: keepKey, segments: &segments)
                }
            }
        }
        try visit(root.top, level: root.topLevel, upper: nil)
        try addSegments(segments, format: .two)
        try buildFolders(keepsUnreached: keepsUnreached)
        try checkFileNumbers(pages: pages.map(\.ref.fileNumber) + interiorPages.map(\.fileNumber), special: root.specialFiles.map(\.file.raw),
                             isOwned: { root.fileIsValid(FileRef(raw: $0)) })
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
