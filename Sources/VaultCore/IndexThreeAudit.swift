import VaultFormat

/// fsck's whole-index rules of index version 3 (docs/FORMAT.md §15.6's last row, §15.7), fed one
/// record at a time in key order while the leaves are read page by page. It keeps what the rules
/// need, not the tree: the writer device's referenced numbers as bits (512 bytes per block of
/// 4,096) beside the blocks' bits as read, one tuple per entry, link, packed member and listed
/// item (sorted and compared at the end), and each folder's parent (reachability). The summary
/// rule needs no memory: a folder's summary and entries follow its record in key order.
/// Each finding is one line, "index 3, RULE: WHAT (page N)", naming items, folders, hashes and
/// file numbers, never a plaintext name.
struct IndexThreeAudit {
    /// A name of a folder: from an entry record, or from an item's link.
    private struct Naming {
        var folder: UInt64, hash: UInt32, name: [UInt8], item: UInt64, type: ItemRecord.ItemType, page: FileRef

        static func placeOrder(_ a: Naming, _ b: Naming) -> Bool {
            (a.folder, a.hash) != (b.folder, b.hash) ? (a.folder, a.hash) < (b.folder, b.hash) : a.name.lexicographicallyPrecedes(b.name)
        }

        func samePlace(_ other: Naming) -> Bool { folder == other.folder && hash == other.hash && name == other.name }
    }

    private struct Member { var pack: UInt64, item: UInt64, offset: UInt32, length: UInt32 }

    /// The item whose records are being read: its record's type, its summary, the entries seen.
    private struct Current {
        var id: UInt64, page: FileRef
        var type: ItemRecord.ItemType?
        var summary: (FolderSummary, FileRef)?
        var entries: UInt64 = 0, folders: UInt64 = 0
    }

    let numbers: IndexRecordsV3.Numbers
    let entryHash: IndexRecordsV3.EntryHash
    private(set) var findings: [String] = []
    /// Items that nothing reaches from the root folder (after `finish`): `--repair` moves the
    /// folders among them to lost+found, which brings the rest back.
    private(set) var unreached: [(id: UInt64, isFolder: Bool)] = []
    private var referenced: [UInt32: [UInt8]] = [:]
    private var bits: [UInt32: (held: [UInt8], page: FileRef)] = [:]
    private var packEntries: [UInt64: (entry: FileBlock.Pack, page: FileRef)] = [:]
    private var packs: Set<UInt64> = []
    private var entries: [Naming] = [], links: [Naming] = []
    private var members: [Member] = [], listed: [(pack: UInt64, item: UInt64, page: FileRef)] = []
    private var folderParents: [UInt64: UInt64] = [:]
    private var current: Current?

    init(numbers: IndexRecordsV3.Numbers, entryHash: @escaping IndexRecordsV3.EntryHash) {
        self.numbers = numbers
        self.entryHash = entryHash
    }

    private mutating func report(_ rule: String, _ what: String, page: FileRef? = nil) {
        findings.append("index 3, \(rule): \(what)" + (page.map { " (page \($0))" } ?? ""))
    }

    /// One record of a leaf, in key order, checked by its own rules already (`decodeRecord`).
    mutating func add(_ key: RecordKey, _ record: IndexPageV3.Record, page: FileRef) throws {
        if current?.id != key.itemID {
            closeItem()
            current = Current(id: key.itemID, page: page)
        }
        switch record {
        case .item(let item):
            current?.type = item.type
            if item.type == .folder, key.itemID != Format.rootItemID, let link = item.links.first { folderParents[key.itemID] = link.parentID }
            for link in item.links {
                links.append(Naming(folder: link.parentID, hash: try entryHash(link.name), name: link.name, item: key.itemID, type: item.type, page: page))
            }
            if case .packed(let member) = item.layout, let number = own(member.fileNumber) {
                packs.insert(number)
                members.append(Member(pack: number, item: key.itemID, offset: member.offset, length: member.sealedLength))
            }
        case .segment(let chunks):
            for chunk in chunks { if let number = own(chunk.file.raw) { use(number, "item \(key.itemID)", page) } }
        case .folderSummary(let summary): current?.summary = (summary, page)
        case .folderEntries(let record):
            let hash = key.sub - IndexKeyV3.firstEntriesSub
            for entry in record.entries {
                entries.append(Naming(folder: key.itemID, hash: hash, name: entry.name, item: entry.itemID, type: entry.type, page: page))
                current?.entries += 1
                if entry.type == .folder { current?.folders += 1 }
            }
        case .fileBlock(let block):
            guard case .fileBlock(device: numbers.device, block: let k) = try IndexKeyV3(key, deviceCount: Int(UInt16.max) + 1) else { return }
            bits[k] = (block.held, page)
            for pack in block.packs { packEntries[UInt64(k) * IndexKeyV3.numbersPerBlock + UInt64(pack.index)] = (pack, page) }
        case .packMembers(let list):
            guard case .packMembers(device: numbers.device, pack: let pack) = try IndexKeyV3(key, deviceCount: Int(UInt16.max) + 1) else { return }
            for item in list.itemIDs { listed.append((pack, item, page)) }
        }
    }

    /// A number of the writer device that a bit may be set on; nil for another device's.
    private func own(_ raw: UInt64) -> UInt64? {
        let file = FileRef(raw: raw)
        return file.device == numbers.device && numbers.isData(file.number) ? file.number : nil
    }

    private static func locate(_ number: UInt64) -> (block: UInt32, byte: Int, bit: UInt8) {
        let index = Int(number % IndexKeyV3.numbersPerBlock)
        return (UInt32(number / IndexKeyV3.numbersPerBlock), index >> 3, 1 << (index & 7))
    }

    /// Marks a referenced number; a number referenced twice is a finding (packs are marked once,
    /// whatever their members).
    private mutating func use(_ number: UInt64, _ by: String, _ page: FileRef?) {
        let (block, byte, bit) = Self.locate(number)
        var held = referenced[block] ?? [UInt8](repeating: 0, count: FileBlock.heldSize)
        if held[byte] & bit != 0 { report("used twice", "file \(number), again by \(by)", page: page) }
        held[byte] |= bit
        referenced[block] = held
    }

    /// The summary rule of the item just read (§15.3): a folder has one, counting its entries;
    /// nothing else has a summary or entries.
    private mutating func closeItem() {
        guard let item = current else { return }
        current = nil
        let isFolder = item.type == .folder
        if isFolder && item.summary == nil { report("no summary", "folder \(item.id)", page: item.page) }
        if let (summary, page) = item.summary {
            if !isFolder {
                report("summary of a non-folder", "item \(item.id)", page: page)
            } else if summary != FolderSummary(entryCount: item.entries, subfolderCount: item.folders) {
                report("summary", "folder \(item.id) counts \(summary.entryCount) entries, \(summary.subfolderCount) folders; its entries are \(item.entries), \(item.folders)", page: page)
            }
        }
        if !isFolder && item.entries > 0 { report("entries under a non-folder", "item \(item.id)", page: item.page) }
    }

    /// The rules across records, once every leaf was read. `rootHeld`: the raw FileRefs the root
    /// holds itself (§15.4: special files, a names move's slot files, the sync base's pins),
    /// without the index's own files.
    mutating func finish(rootHeld: Set<UInt64>) -> [String] {
        closeItem()
        for number in packs.sorted() { use(number, "a pack", nil) }
        for raw in rootHeld {
            guard let number = own(raw) else { continue }
            let (block, byte, bit) = Self.locate(number)
            referenced[block, default: [UInt8](repeating: 0, count: FileBlock.heldSize)][byte] |= bit
        }
        checkBits()
        checkPacks()
        checkNames()
        checkReach()
        return findings
    }

    /// §15.4: a block exactly where the device owns numbers, each bit set exactly on a held number.
    private mutating func checkBits() {
        let expected = numbers.blocks
        for block in expected.subtracting(bits.keys).sorted() { report("file block missing", "block \(block) of device \(numbers.device)") }
        // A block outside them decodes only if empty (`FileBlock.validate`): an earlier release's
        // leftover, which the next commit removes.
        for block in Set(referenced.keys).union(bits.keys).intersection(expected).sorted() {
            let held = referenced[block] ?? [UInt8](repeating: 0, count: FileBlock.heldSize)
            guard let (read, page) = bits[block], read != held else { continue }
            for byte in 0..<FileBlock.heldSize where read[byte] != held[byte] {
                for bit in 0..<8 {
                    let mask = UInt8(1) << bit, number = UInt64(block) * IndexKeyV3.numbersPerBlock + UInt64(byte * 8 + bit)
                    if held[byte] & mask != 0 && read[byte] & mask == 0 { report("bit clear", "file \(number) is held but its bit is clear", page: page) }
                    if held[byte] & mask == 0 && read[byte] & mask != 0 { report("bit set", "file \(number)'s bit is set, but nothing holds it", page: page) }
                }
            }
        }
    }

    /// §15.4: a pack entry exactly for each pack that holds members, with their live bytes and
    /// end; each member list exactly its pack's items; members within a pack disjoint.
    private mutating func checkPacks() {
        members.sort { ($0.pack, $0.offset) < ($1.pack, $1.offset) }
        var byPack: [UInt64: (items: [UInt64], live: UInt64, end: UInt64)] = [:]
        for (i, member) in members.enumerated() {
            if i > 0, members[i - 1].pack == member.pack, UInt64(members[i - 1].offset) + UInt64(members[i - 1].length) > UInt64(member.offset) {
                report("members overlap", "pack \(member.pack): items \(members[i - 1].item) and \(member.item)")
            }
            // In place, as in `IndexRecordsV3.itemFilesAndPacks`.
            func add(_ pack: inout (items: [UInt64], live: UInt64, end: UInt64)) {
                pack.items.append(member.item)
                pack.live += UInt64(member.length)
                pack.end = max(pack.end, UInt64(member.offset) + UInt64(member.length))
            }
            add(&byPack[member.pack, default: ([], 0, 0)])
        }
        for number in Set(byPack.keys).union(packEntries.keys).sorted() {
            switch (byPack[number], packEntries[number]) {
            case (let pack?, nil): report("pack without entry", "pack \(number) holds members of \(pack.items.count) items")
            case (nil, let entry?): report("pack entry without members", "file \(number)", page: entry.page)
            case (let pack?, let entry?) where UInt64(entry.entry.liveBytes) != pack.live || UInt64(entry.entry.reservedEnd) != pack.end:
                report("pack entry", "pack \(number)'s entry says \(entry.entry.liveBytes) live bytes to \(entry.entry.reservedEnd); its members take \(pack.live) to \(pack.end)", page: entry.page)
            default: break
            }
        }
        listed.sort { ($0.pack, $0.item) < ($1.pack, $1.item) }
        var inList: [UInt64: Set<UInt64>] = [:]
        for entry in listed {
            inList[entry.pack, default: []].insert(entry.item)
            if byPack[entry.pack]?.items.contains(entry.item) != true {
                report("member list", "pack \(entry.pack)'s list names item \(entry.item), which has no member there", page: entry.page)
            }
        }
        for (number, pack) in byPack.sorted(by: { $0.key < $1.key }) {
            for item in pack.items.sorted() where inList[number]?.contains(item) != true {
                report("member list", "pack \(number)'s list lacks item \(item)")
            }
        }
    }

    /// §15.3: F's entries hold (name, X, t) exactly when item X has the link (F, name) and type t.
    private mutating func checkNames() {
        entries.sort(by: Naming.placeOrder)
        links.sort(by: Naming.placeOrder)
        var e = 0, l = 0
        while e < entries.count || l < links.count {
            if l == links.count || (e < entries.count && Naming.placeOrder(entries[e], links[l])) {
                let entry = entries[e]
                report("entry without link", "folder \(entry.folder), hash \(entry.hash): item \(entry.item) has no such link", page: entry.page)
                e += 1
            } else if e == entries.count || Naming.placeOrder(links[l], entries[e]) {
                let link = links[l]
                report("link without entry", "item \(link.item)'s link in folder \(link.folder), hash \(link.hash), has no entry", page: link.page)
                l += 1
            } else {
                let (entry, link) = (entries[e], links[l])
                if entry.item != link.item || entry.type != link.type {
                    report("entry of another item", "folder \(entry.folder), hash \(entry.hash): the entry says item \(entry.item) of type \(entry.type), the link is item \(link.item)'s of type \(link.type)", page: entry.page)
                }
                e += 1
                l += 1
            }
        }
    }

    /// Records nothing reaches: a folder whose chain of parents does not lead to the root folder
    /// (a cycle), and the items whose every link lies in such folders.
    private mutating func checkReach() {
        var reached: [UInt64: Bool] = [Format.rootItemID: true]
        for start in folderParents.keys {
            var chain: [UInt64] = [], seen: Set<UInt64> = [], folder = start
            var result = false
            while true {
                if let known = reached[folder] { result = known; break }
                guard seen.insert(folder).inserted, let parent = folderParents[folder] else { break }
                chain.append(folder)
                folder = parent
            }
            for id in chain { reached[id] = result }
        }
        var items: [UInt64: (reached: Bool, isFolder: Bool, page: FileRef)] = [:]
        for link in links {
            let here = reached[link.folder] == true
            items[link.item] = (items[link.item]?.reached == true || here, link.type == .folder, link.page)
        }
        for (id, item) in items.sorted(by: { $0.key < $1.key }) where !item.reached {
            unreached.append((id, item.isFolder))
            report("unreached", "\(item.isFolder ? "folder" : "item") \(id) is not reached from the root folder", page: item.page)
        }
    }
}
