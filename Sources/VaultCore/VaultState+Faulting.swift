import VaultCrypto
import VaultFormat
import VaultStore

/// What loading an index-3 leaf after the open needs (pages on demand, issue 17 step 6c): the
/// root that listed the leaves not loaded, without its keys. A leaf's records are checked
/// against that root's device table and files (§15.6), as the open would have: a leaf no commit
/// loaded is still the one that root lists, and the device table changes only in whole-vault
/// paths, which load every leaf first.
struct IndexLeafSource {
    private(set) var root: IndexRootV3

    init(_ opened: IndexRootV3) {
        var root = opened
        root.root.top = []
        root.root.extensions = []
        root.root.devices = opened.root.devices.map { device in
            var kept = device
            kept.namesKey = []
            return kept
        }
        self.root = root
    }

    /// The items this device made since the open are valid too (a leaf written and evicted).
    mutating func allowItems(below next: UInt64, device: UInt16) {
        let index = Int(device)
        guard index < root.root.devices.count, root.root.devices[index].nextItemID < next else { return }
        root.root.devices[index].nextItemCounter = UInt32(truncatingIfNeeded: next)
    }
}

/// Pages on demand: an open that reads the root and the leaves it needs, then each operation
/// loads the leaves over the items it touches (`fault`), and what reads every item loads the
/// rest first (`loadWholeIndex`). A leaf is loaded with the run of leaves its items span (an
/// item's record, segments and entries may continue on the next leaf), so an item in the tree
/// always has every record of its range, and a run is loaded or not as a whole.
extension VaultState {
    /// Whether this open holds the index in part (`Vault.Options.loadsOnDemand`).
    var loadsOnDemand: Bool { leafSource != nil }

    /// Loads item `id`'s leaves unless it is here: its record, segments, and a folder's entries.
    /// An ID in no leaf is simply not loaded (`notFound` follows from the tree).
    mutating func fault(_ id: UInt64) throws {
        guard leafSource != nil else { return }
        if tree.items[id] == nil { try loadLeaves(over: RecordKey.item(id), below: RecordKey.item(id &+ 1)) }
        if leafBudget != nil { noteUse(id) }
    }

    /// `fault` for several items.
    mutating func fault(_ ids: [UInt64]) throws {
        for id in ids { try fault(id) }
    }

    /// Before a commit marks its keys: the leaves of every changed item (a new item's key may
    /// go to a leaf not loaded, routed there by its first key), of the folders whose names
    /// changed (entries and summaries), and the members of the packs whose lists change (their
    /// live bytes and ends are counted from the members).
    mutating func loadForCommit() throws {
        guard loadsOnDemand else { return }
        for id in tree.dirtyItems { try loadLeaves(over: .item(id), below: .item(id &+ 1)) }
        var changedPacks = packs.changedPacks
        if let journal = tree.recordsJournal {
            try fault(journal.links.map(\.parentID))
            try fault(Array(journal.items))
            for (id, old) in journal.files {
                if let pack = old.pack { changedPacks.insert(pack) }
                if let pack = tree.recordedFiles(id).pack { changedPacks.insert(pack) }
            }
        }
        for pack in changedPacks { try faultMembers(of: pack) }
    }

    /// The members of one of this device's packs loaded: its member list's leaf first (§15.4)
    /// when the store knows the pack from its entry only.
    mutating func faultMembers(of pack: UInt64) throws {
        guard loadsOnDemand else { return }
        try knowMembers(of: pack)
        try fault(packs.members(of: pack))
    }

    /// A pack's members, from its member list, for a store that knows it from its entry only.
    private mutating func knowMembers(of pack: UInt64) throws {
        guard packs.needsMembers(pack) else { return }
        let file = FileRef(raw: pack)
        let key = IndexKeyV3.packMembers(device: file.device, pack: file.number).recordKey
        try loadLeaves(over: key, below: RecordKey(itemID: key.itemID, sub: key.sub + 1))
        packs.knowMembers(pack, listed: committer.indexThree?.records.lists[file.number]?.itemIDs ?? [])
    }

    /// Before a path that reads or changes the whole vault (sync, share, a pattern change):
    /// every leaf, and the sync base's pins as committed.
    mutating func readWholeVault() throws {
        try loadWholeIndex()
        try readPinsIfUnread()
    }

    /// Every leaf not loaded yet: before anything that reads every item (sync, share, a
    /// pattern change, fsck, a whole derivation of the records).
    mutating func loadWholeIndex() throws {
        guard leafSource != nil else { return }
        try loadLeaves(Array(committer.pageTable.pages.indices))
        for pack in packs.packs.keys { try knowMembers(of: pack) }
    }

    /// The leaves over keys `lower` up to, not including, `upper`.
    mutating func loadLeaves(over lower: RecordKey, below upper: RecordKey) throws {
        guard leafSource != nil, let range = committer.pageTable.leaves(from: lower, below: upper) else { return }
        try loadLeaves(Array(range))
    }

    /// Loads leaves by index in the page table, each with its run (`runs`), in key order.
    private mutating func loadLeaves(_ wanted: [Int]) throws {
        guard var source = leafSource, let three = committer.indexThree, let local = committer.formatTwo?.localDevice else { return }
        let order = Self.runs(wanted, of: committer.pageTable.pages)
        guard !order.isEmpty else { return }
        // A leaf this session wrote (then evicted) holds items made since the open.
        source.allowItems(below: tree.nextItemID, device: local)
        let contents = try Self.readLeaves(order, of: committer.pageTable.pages, source: source, entryHash: three.entryHash,
                                           storage: storage, secrets: secrets, arena: session.arena)
        adopt(contents, leaves: order)
    }

    /// Leaves read (`readLeaves`) go into the page table, the derived records and the tree.
    mutating func adopt(_ contents: IndexContents, leaves order: [Int]) {
        for (i, page) in zip(order, contents.pages) { committer.loadLeaf(i, keys: page.keys) }
        committer.indexThree?.adoptLoaded(contents.derived, foreign: contents.foreignRecords)
        var folders: [UInt64: [[UInt8]: UInt64]] = [:], subfolders = Set<UInt64>()
        for (id, item) in contents.items where item.isFolder {
            var names: [[UInt8]: UInt64] = [:]
            for record in (contents.derived.entries[id] ?? [:]).values {
                for entry in record.entries {
                    names[entry.name] = entry.itemID
                    if entry.type == .folder { subfolders.insert(entry.itemID) }
                }
            }
            folders[id] = names
        }
        let whole = !committer.pageTable.pages.contains { !$0.isLoaded }
        tree.adopt(contents.items, folders: folders, subfolders: subfolders, whole: whole)
        statistics.leafLoads += order.count
    }

    /// The leaves of `wanted` not loaded, each with its run: a leaf that starts within an item
    /// (its first key a segment or entries, not a reserved ID's) goes with the leaf before it.
    static func runs(_ wanted: [Int], of pages: [PageTable.Page]) -> [Int] {
        func startsWithinItem(_ i: Int) -> Bool { Self.startsWithinItem(pages[i]) }
        var load = Set<Int>()
        for i in wanted where !pages[i].isLoaded && !load.contains(i) {
            var first = i, last = i
            while first > 0 && startsWithinItem(first) { first -= 1 }
            while last + 1 < pages.count && startsWithinItem(last + 1) { last += 1 }
            for j in first...last where !pages[j].isLoaded { load.insert(j) }
        }
        return load.sorted()
    }

    /// A leaf whose first key is a segment, summary or entries of an item, not a reserved ID's.
    static func startsWithinItem(_ page: PageTable.Page) -> Bool {
        let key = page.firstKey
        return key.sub != 0 && !IndexKeyV3.isReserved(key.itemID)
    }

    /// Reads leaves `order` (ascending, whole runs) of a table held in part: their items with
    /// their segments, their derived records, each checked as the open checks a leaf.
    static func readLeaves(_ order: [Int], of pages: [PageTable.Page], source: IndexLeafSource, entryHash: EntryHash,
                           storage: any StorageFolder, secrets: VaultSecrets, arena: SecretArena) throws -> IndexContents {
        let pageBody = pageReader(storage: storage, secrets: secrets, arena: arena, version: IndexRootV3.envelopeVersion)
        var contents = IndexContents()
        var segments: [(key: RecordKey, entries: [(index: Int, ref: StoredRef)])] = []
        do {
            for i in order {
                let leaf = IndexContents.ListedLeaf(ref: pages[i].ref!, firstKey: pages[i].firstKey,
                                                    upper: i + 1 < pages.count ? pages[i + 1].firstKey : nil)
                try contents.loadLeaf(leaf, of: source.root.root, indexThree: (source.root, entryHash), pageBody: pageBody,
                                      keepKey: keyKeeper(arena), segments: &segments)
            }
            try contents.addSegments(segments, format: .two)
        } catch {
            // Keys kept for what did not load: the items' and the segments' not yet theirs.
            for item in contents.items.values { item.keySlots.forEach(arena.free) }
            for (_, entries) in segments { for entry in entries { if let slot = entry.ref.key { arena.free(slot) } } }
            throw error
        }
        return contents
    }

    /// Moves a key into `arena` and wipes the array: how an index's keys are kept as it is read.
    static func keyKeeper(_ arena: SecretArena) -> (inout [UInt8]) throws -> SecretArena.Slot? {
        { key in
            defer { Sealer.wipe(&key) }
            return try arena.allocate(copying: key)
        }
    }

    /// Reads and opens an index page at a ref (its key in `arena`) expected at a level.
    /// `redirects`: names whose bytes lie at another name (a sync's staged downloads, §13.11).
    static func pageReader(storage: any StorageFolder, secrets: VaultSecrets, arena: SecretArena, redirects: [String: String] = [:],
                           version: UInt8) -> (StoredRef, UInt8) throws -> [UInt8] {
        { ref, level in
            let name = try secrets.fileName(ref.fileNumber)
            guard let file = try storage.read(redirects[name] ?? name) else {
                throw VaultError.damagedIndex("index page \(FileRef(raw: ref.fileNumber)) is missing")
            }
            do {
                return try Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexPage, version: version,
                                               key: .arena(ref.key!, arena), seal: .indexPageV2(level: level))
            } catch CryptoError.authenticationFailed {
                throw VaultError.damagedIndex("index page \(FileRef(raw: ref.fileNumber)) does not open")
            }
        }
    }
}
