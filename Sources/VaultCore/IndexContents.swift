import VaultCrypto
import VaultFormat

/// The items of an index, built from its opened page bodies with every rule that spans records
/// checked (docs/FORMAT.md §5.2, §6.1). No cryptography and no storage: `VaultState.open` gives
/// it the pages it opened; `IndexCheck` gives it bytes, which is how the fuzzer reaches it.
struct IndexContents {
    var items: [UInt64: Item] = [:]
    /// Folder → name → item, derived from the items' links.
    var children: [UInt64: [[UInt8]: UInt64]] = [:]
    var pages: [(ref: StoredRef, keys: [RecordKey])] = []
    var packs: [UInt64: PackInfo] = [:]
    /// Every file number the index uses: pages, chunks, packs.
    var usedFiles: Set<UInt64> = []
    /// Format 2: interior pages read.
    var interiorPages: [StoredRef] = []
    /// Format 2 with a root of level 1: its interior pages, each with its count of leaves, which
    /// the writer keeps (a root of a higher level is folded into one level at the next commit).
    var parents: [(ref: StoredRef, count: Int)] = []
    /// Index version 3: the writer device's derived records as read, and other devices' (§15.4).
    var derived = IndexRecordsV3()
    var foreignRecords: [RecordKey: [UInt8]] = [:]

    /// `pageBody` returns the opened body of one page of the root (its inner block's body);
    /// `keepKey` takes the item key of a file record (and wipes the array) into locked memory.
    init(root: IndexRoot, pageBody: (SealedRef) throws -> [UInt8],
         keepKey: (inout [UInt8]) throws -> SecretArena.Slot?) throws {
        var segments: [(key: RecordKey, entries: [(index: Int, ref: StoredRef)])] = []
        for ref in root.pages {
            // A page body and its records hold item keys and names: zeroed once decoded.
            let body = try pageBody(ref)
            defer { body.wipeStorage() }
            let records = try IndexPage.decode(body[...])
            defer { for record in records { record.value.wipeStorage() } }
            try addLeaf(StoredRef(ref), records, format: .one, isValidID: { $0 < root.nextItemID }, keepKey: keepKey, segments: &segments)
        }
        try addSegments(segments, format: .one)
        try buildFolders()
        let reserved = Format.indexSlotCount + UInt64(root.coverCount)
        try checkFileNumbers(pages: root.pages.map(\.fileNumber), special: [],
                             isOwned: { $0 >= reserved && root.owns($0) })
    }

    /// One leaf page's records: items (with their keys moved into locked memory by `keepKey`)
    /// and chunk-map segments, kept for `addSegments`.
    /// `keys`: every key of the page, when `records` are only its items and segments (index 3).
    mutating func addLeaf(_ ref: StoredRef, _ records: [(key: RecordKey, value: [UInt8])], keys: [RecordKey]? = nil, format: StorageFormat,
                          isValidID: (UInt64) -> Bool, keepKey: (inout [UInt8]) throws -> SecretArena.Slot?,
                          segments: inout [(key: RecordKey, entries: [(index: Int, ref: StoredRef)])]) throws {
        let keys = keys ?? records.map(\.key)
        if let lastKey = pages.last?.keys.last, !(lastKey < keys[0]) { throw VaultError.damagedIndex("index pages out of order") }
        for record in records {
            if record.key.sub == 0 {
                var decoded = try ItemRecord.decode(record.value)
                guard decoded.recordVersion == format.envelopeVersion else {
                    throw VaultError.damagedIndex("item \(record.key.itemID) has a record of version \(decoded.recordVersion)")
                }
                var item = Item(record: decoded)
                // `item` shared the key's storage: with it gone, keepKey zeroes the key in place.
                item.record.itemKey = []
                defer { decoded.itemKey.wipeStorage() }
                if decoded.type == .file && !decoded.itemKey.isEmpty { item.key = try keepKey(&decoded.itemKey) }
                if case .packed(let member) = decoded.layout, !member.key.isEmpty {
                    // The record keeps zeros in the key's place (every copy shares the storage).
                    var key = member.key
                    defer { member.key.wipeStorage() }
                    item.memberKey = try keepKey(&key)
                    var placeholder = member
                    placeholder.key = ItemRecord.Member.keyPlaceholder
                    item.record.layout = .packed(placeholder)
                }
                guard record.key.itemID >= Format.rootItemID, isValidID(record.key.itemID) else {
                    throw VaultError.damagedIndex("item \(record.key.itemID) beyond nextItemID")
                }
                items[record.key.itemID] = item
            } else if format == .one {
                segments.append((record.key, try ChunkSegment.decode(record.value).map { ($0.indexInSegment, StoredRef($0.ref)) }))
            } else {
                var entries: [(index: Int, ref: StoredRef)] = []
                for entry in try ChunkSegmentV2.decode(record.value) {
                    switch entry.seal {
                    case .formatOne(let nonce):
                        entries.append((entry.indexInSegment, StoredRef(fileNumber: entry.file.raw, nonce: nonce)))
                    case .key(var key):
                        let slot = try keepKey(&key)
                        key.wipeStorage()
                        guard let slot else { throw VaultError.damagedIndex("a chunk key was not kept") }
                        entries.append((entry.indexInSegment, StoredRef(fileNumber: entry.file.raw, key: slot)))
                    }
                }
                segments.append((record.key, entries))
            }
        }
        pages.append((ref, keys))
    }

    /// The chunks of the segments, on items that are chunked files of a size that has them.
    mutating func addSegments(_ segments: [(key: RecordKey, entries: [(index: Int, ref: StoredRef)])], format: StorageFormat) throws {
        for (key, entries) in segments {
            guard let item = items[key.itemID], item.isFile, item.record.layout == .chunked else {
                throw VaultError.damagedIndex("chunk map of item \(key.itemID), which is not a chunked file")
            }
            let base = ChunkOffsets.chunks(inSegment: Int(key.sub - 1)).lowerBound
            for entry in entries {
                let index = base + entry.index
                guard index < item.chunkCount else { throw VaultError.damagedIndex("chunk \(index) beyond the size of item \(key.itemID)") }
                // A format-1 chunk in a format-2 index (an upgraded item) opens with the item's key only.
                guard format == .one || entry.ref.key != nil || item.key != nil else { throw VaultError.damagedIndex("format-1 chunk of item \(key.itemID) without an item key") }
                items[key.itemID]!.chunks[index] = entry.ref
            }
        }
    }

    /// Folder contents from the links, rejecting duplicate names, non-folder parents, folders with
    /// other than one link, and items not reachable from the root folder (R-SEC-3).
    /// `keepsUnreached`: items nothing reaches from the root folder (a cycle of folders) are
    /// kept rather than refused: fsck's open of index 3, which reports them (§15.6's last row).
    mutating func buildFolders(keepsUnreached: Bool = false) throws {
        guard let root = items[Format.rootItemID], root.isFolder, root.record.links.isEmpty else {
            throw VaultError.damagedIndex("the root folder is missing or malformed")
        }
        // Each folder's name table sized once: grown from empty, a folder of 10^5 names would
        // rehash every name at each doubling (most of the open's time in a profile).
        var entryCounts: [UInt64: Int] = [:]
        for item in items.values { for link in item.record.links { entryCounts[link.parentID, default: 0] += 1 } }
        children = [:]
        for (id, item) in items where item.isFolder { children[id] = Dictionary(minimumCapacity: entryCounts[id] ?? 0) }
        for (id, item) in items {
            if id != Format.rootItemID && item.record.links.isEmpty { throw VaultError.damagedIndex("item \(id) has no name") }
            if item.isFolder && id != Format.rootItemID && item.record.links.count != 1 {
                throw VaultError.damagedIndex("folder \(id) has \(item.record.links.count) names")
            }
            for link in item.record.links {
                guard children[link.parentID] != nil else { throw VaultError.damagedIndex("item \(id) is in \(link.parentID), not a folder") }
                guard children[link.parentID]!.updateValue(id, forKey: link.name) == nil else {
                    throw VaultError.damagedIndex("a name appears twice in folder \(link.parentID)")
                }
            }
        }
        var reached: Set<UInt64> = [Format.rootItemID]
        reached.reserveCapacity(items.count)
        var queue: [UInt64] = [Format.rootItemID]
        while let folder = queue.popLast() {
            for child in children[folder]!.values where reached.insert(child).inserted {
                if items[child]!.isFolder { queue.append(child) }
            }
        }
        guard keepsUnreached || reached.count == items.count else { throw VaultError.damagedIndex("items not reachable from the root folder") }
    }

    /// Every file number used once, owned, and not a slot or cover; members of a pack disjoint.
    /// `special`: files named otherwise (format 2's unlock record), used but never free.
    mutating func checkFileNumbers(pages: [UInt64], special: [UInt64], isOwned: (UInt64) -> Bool) throws {
        var used = Set<UInt64>()
        func use(_ number: UInt64, _ what: String) throws {
            guard isOwned(number) else { throw VaultError.damagedIndex("\(what) in file \(number), which is not the vault's") }
            guard used.insert(number).inserted else { throw VaultError.damagedIndex("file \(number) used twice") }
        }
        for number in special { try use(number, "unlock record") }
        for number in pages { try use(number, "index page") }
        var members: [UInt64: [(offset: Int, end: Int)]] = [:]
        for (id, item) in items {
            for (_, ref) in item.chunks { try use(ref.fileNumber, "chunk") }
            if let member = item.packedMember {
                let offset = Int(member.offset), end = offset + Int(member.sealedLength)
                if members[member.fileNumber] == nil { try use(member.fileNumber, "pack") }
                members[member.fileNumber, default: []].append((offset, end))
                packs[member.fileNumber, default: PackInfo()].liveBytes += Int(member.sealedLength)
                packs[member.fileNumber]!.members.insert(id)
                packs[member.fileNumber]!.reservedEnd = max(packs[member.fileNumber]!.reservedEnd, end)
            }
        }
        for (number, ranges) in members {
            let sorted = ranges.sorted { $0.offset < $1.offset }
            for (a, b) in zip(sorted, sorted.dropFirst()) where b.offset < a.end {
                throw VaultError.damagedIndex("members overlap in pack \(number)")
            }
        }
        usedFiles = used
    }
}

/// Checks decoded index contents the way opening a vault does after decrypting them, without
/// keys or storage. For fuzzing and tools: it throws on anything a vault would refuse and must
/// never trap, whatever the bytes.
public enum IndexCheck {
    /// `pageBodies` are the bodies of the root's pages, in the root's order.
    public static func check(root: IndexRoot, pageBodies: [[UInt8]]) throws {
        guard pageBodies.count == root.pages.count else { throw VaultError.damagedIndex("page count") }
        var next = 0
        _ = try IndexContents(root: root, pageBody: { _ in
            defer { next += 1 }
            return pageBodies[next]
        }, keepKey: { key in
            Sealer.wipe(&key)
            return nil
        })
    }
}
