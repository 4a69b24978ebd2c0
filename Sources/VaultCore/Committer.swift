import VaultCrypto
import VaultFormat
import VaultStore

/// The index on disk and the commit point (docs/FORMAT.md §5, §9.2 steps 4-5): which pages hold
/// which records, the generation, the vault and page keys, the covers' refresh, and a slot a
/// torn first commit left missing. The data a root points to is written and synced before it
/// (`VaultState.commit`); the root goes into the slot that holds the older one.
struct Committer {
    let vaultKey: SecretBytes
    let pageKey: SecretBytes
    private(set) var pageTable: PageTable
    /// The committed generation; 0 while the vault has never been written.
    var generation: UInt64
    /// Format 2's root: nil for a format-1 vault (`Committer+FormatTwo.swift`).
    var formatTwo: FormatTwoRoot?
    /// Format 2: the root just committed, sealed for the other slot (written after the commit point).
    var pendingCopy: [UInt8]?
    /// A slot whose file is missing though the other opens: made again at the next change.
    var missingSlot: UInt64?
    /// A format-1 vault being upgraded: format 2 in memory, format 1 on disk until the commit
    /// point of its next commit (`VaultState+Upgrade.swift`).
    var upgrade: FormatOneUpgrade?
    /// Index version 3 (docs/FORMAT.md §15): nil while the vault is index 2 (or format 1).
    var indexThree: IndexThree?
    /// The vault becomes index 3 at its next commit that writes (§15.1's conversion).
    var convertsToIndexThree = false
    /// When the covers last got new bytes in this session, and whether a commit came since.
    private var coversRefreshedAt: Int64?
    var committedSinceCoverRefresh = false

    /// At most one refresh of the covers per this many nanoseconds (R-COV-3), and one at lock.
    static let coverRefreshInterval: Int64 = 30_000_000_000

    init(vaultKey: SecretBytes, generation: UInt64, pageTable: PageTable = PageTable(), formatTwo: FormatTwoRoot? = nil) throws {
        self.vaultKey = vaultKey
        // Format 2 has a key per page version; its pages never use this one.
        pageKey = try HKDF.deriveKey(from: vaultKey, salt: [], info: Label.pageKey, count: Format.keySize)
        self.generation = generation
        self.pageTable = pageTable
        self.formatTwo = formatTwo
    }

    var format: StorageFormat { formatTwo == nil ? .one : .two }
    /// The format of the committed root on disk: format 1 until an upgrade commits.
    var storedFormat: StorageFormat { upgrade == nil ? format : .one }

    /// The pages of an index just read.
    mutating func useLoaded(_ pages: PageTable) { pageTable = pages }

    /// Leaf `index` of a table held in part was read (`VaultState.fault`).
    mutating func loadLeaf(_ index: Int, keys: [RecordKey]) { pageTable.load(index, keys: keys) }

    /// Leaf `index`, clean, goes back to its first key (eviction).
    mutating func unloadLeaf(_ index: Int) { pageTable.unload(index) }

    /// Leaves were used at `tick` (eviction's order).
    mutating func useLeaves(_ range: ClosedRange<Int>, tick: UInt64) { pageTable.use(range, tick: tick) }

    /// Brings index 3's folder entries and summaries to `tree`'s names: from `journal` (one
    /// that applies to these records), or, without one (an open, a merge), derived again from
    /// every item. The pages of the keys that changed are written again, the keys they lost
    /// removed. Returns how many names it hashed.
    mutating func updateNameRecords(_ tree: ItemTree, journal: ItemTree.RecordsJournal?) throws -> Int {
        guard var three = indexThree else { return 0 }
        // Taken out while it changes, so that its records are not copied whole.
        indexThree = nil
        defer { indexThree = three }
        var hashes = 0
        let entryHash = three.entryHash
        func hash(_ name: [UInt8]) throws -> UInt32 {
            hashes += 1
            return try entryHash(name)
        }
        let (changed, removed): ([RecordKey], [RecordKey])
        if let journal {
            (changed, removed) = try three.records.updateNames(tree, journal: journal, entryHash: hash)
        } else {
            let old = three.records
            try three.records.deriveNames(tree, entryHash: hash)
            (changed, removed) = three.records.nameChanges(from: old)
        }
        for key in removed { pageTable.remove(key) }
        pageTable.touch(changed)
        return hashes
    }

    /// Takes `blocks` and `lists` as the file blocks and member lists the next pages hold
    /// (index 3), derived with `basis`; false when they are those it has.
    mutating func useFileRecords(_ blocks: [UInt32: FileBlock], _ lists: [UInt64: PackMembers], device: UInt16,
                                 basis: IndexRecordsV3.FilesBasis) -> Bool {
        guard var three = indexThree else { return false }
        indexThree = nil
        defer { indexThree = three }
        three.filesBasis = basis
        guard blocks != three.records.blocks || lists != three.records.lists else { return false }
        var files = IndexRecordsV3()
        (files.blocks, files.lists) = (blocks, lists)
        let (changed, removed) = files.fileChanges(from: three.records, device: device)
        for key in removed { pageTable.remove(key) }
        pageTable.touch(changed)
        (three.records.blocks, three.records.lists) = (blocks, lists)
        return true
    }

    /// Every page is written again at the next commit.
    mutating func rewriteAllPages() { pageTable.markAllDirty() }

    var isNew: Bool { generation == 0 }
    var hasChanges: Bool { pageTable.isDirty || formatTwo?.rootDue == true }

    /// Marks the pages of every changed record; items without names are not written (an unlinked
    /// file still open lives in memory only).
    mutating func markChangedRecords(_ tree: inout ItemTree) {
        for key in tree.removedKeys { pageTable.remove(key) }
        tree.removedKeys = []
        var touched: [RecordKey] = []
        defer { pageTable.touch(touched) }
        for id in tree.dirtyItems {
            let segments = tree.dirtySegments[id] ?? []
            if let item = tree.items[id], id == Format.rootItemID || !item.record.links.isEmpty {
                touched.append(.item(id))
                let present = item.segmentIndexes
                for segment in segments {
                    if present.contains(segment) { touched.append(.segment(id, segment)) } else { pageTable.remove(.segment(id, segment)) }
                }
            } else {
                pageTable.remove(.item(id))
                let present = tree.items[id]?.segmentIndexes ?? []
                for segment in segments.union(present) { pageTable.remove(.segment(id, segment)) }
            }
        }
    }

    /// Writes every changed page again from its records (`encode`), as `PageTable.planWrites`
    /// cuts and joins them; then, format 2, the interior pages above changed leaves
    /// (`PageTable.arrangeParents`). Returns how many pages it wrote.
    mutating func writeDirtyPages(writer: inout FileWriter, arena: SecretArena, fanOut: PageTable.FanOut,
                                  encode: (RecordKey) -> [UInt8]) throws -> Int {
        let limit = Format.payloadSize - (format == .one ? IndexPage.headerSize : IndexPageV2.headerSize)
        // Item keys and names: zeroed once written.
        var encoded: [Int: [(key: RecordKey, value: [UInt8])]] = [:]
        defer { for records in encoded.values { for record in records { record.value.wipeStorage() } } }
        var written: [Int: [(ref: StoredRef, keys: [RecordKey])]] = [:]
        var count = 0, start = 0
        while start < pageTable.pages.count, let write = pageTable.nextWrite(from: start, limit: limit, joinsSmall: format == .two, costs: { i, keys in
            let records = keys.map { (key: $0, value: encode($0)) }
            encoded[i] = records
            return records.map { RecordKey.overhead + $0.value.count }
        }) {
            let records = (write.first...write.last).flatMap { encoded[$0]! }
            for range in write.pieces {
                let piece = Array(records[range])
                let ref = try format == .one ? writePage(piece, writer: &writer) : writePageV2(level: 0, .leaf(piece), writer: &writer, arena: arena)
                count += 1
                written[write.first, default: []].append((ref, piece.map(\.key)))
            }
            for joined in write.first + 1 ..< write.last + 1 { written[joined] = [] }
            for i in write.first...write.last { for record in encoded.removeValue(forKey: i) ?? [] { record.value.wipeStorage() } }
            start = write.last + 1
        }
        var freed = pageTable.replaceDirty(with: written)
        if format == .two {
            freed += pageTable.arrangeParents(fanOut)
            for (index, children) in pageTable.dirtyParents {
                let refs = children.map { PageRef(firstKey: $0.firstKey, file: FileRef(raw: $0.ref.fileNumber), pageKey: arena.bytes($0.ref.key!)) }
                defer { for ref in refs { ref.pageKey.wipeStorage() } }
                let ref = try writePageV2(level: 1, .interior(refs), writer: &writer, arena: arena)
                count += 1
                if let old = pageTable.parentWritten(index, at: ref) { freed.append(old) }
            }
        }
        for ref in freed {
            writer.release(ref.fileNumber)
            if let key = ref.key { arena.free(key) }
        }
        return count
    }

    /// A format-1 page (§5.2): sealed with the page key, its nonce recorded in the root.
    private func writePage(_ records: [(key: RecordKey, value: [UInt8])], writer: inout FileWriter) throws -> StoredRef {
        var body = IndexPage.encode(records)
        defer { Sealer.wipe(&body) }
        let (nonce, file) = try Sealer.sealEnvelope(kind: .indexPage, body: body[...], key: .secret(pageKey),
                                                    seal: .indexPage, random: writer.random)
        return StoredRef(fileNumber: try writer.store(file), nonce: nonce)
    }

    func coversAreDue(now: Int64) -> Bool {
        guard let last = coversRefreshedAt else { return true }
        return now - last >= Self.coverRefreshInterval
    }

    /// A new vault's covers are new: their first refresh is due only an interval later.
    mutating func coversAreNew(now: Int64) { coversRefreshedAt = now }

    /// Writes `random(F)` over each of the vault's covers and syncs them (§9.2 step 4).
    mutating func refreshCovers(writer: FileWriter, now: () -> Int64) throws {
        let storage = writer.storage
        var written: [String] = []
        var created = false
        for number in writer.allocator.coverNumbers {
            let name = try writer.name(number)
            if (try? storage.read(name, offset: 0, count: 0)) != nil {
                try storage.write(name, offset: 0, bytes: try writer.random.bytes(Format.fileSize))
                written.append(name)
            } else if try !storage.entryExists(name) {
                // A cover removed behind the vault's back is made again; one of the wrong size or
                // type is damage and left alone (R-SEC-4). Neither stops the commit.
                try storage.create(name, contents: try writer.random.bytes(Format.fileSize), durable: true)
                created = true
            }
        }
        try storage.sync(written)
        if created { try storage.syncFolder() }
        coversRefreshedAt = now()
        committedSinceCoverRefresh = false
    }

    /// The commit point: root g+1 into slot (g+1) mod 2, synced (§9.2 step 5). From here on the
    /// state in memory is generation g+1's, whatever the clean-up after it meets.
    mutating func writeRoot(releasing: [UInt64], nextItemID: UInt64, writer: inout FileWriter, arena: SecretArena,
                            coversRefreshed: Bool) throws {
        if let formatTwo {
            return try writeRootV2(formatTwo, releasing: releasing, nextItemID: nextItemID, writer: &writer, arena: arena,
                                   coversRefreshed: coversRefreshed)
        }
        let generation = self.generation + 1
        let slot = generation % Format.indexSlotCount
        let allocator = writer.allocator
        var root = IndexRoot(generation: generation, vaultKey: vaultKey.copyBytes(), nextFileNumber: allocator.nextFileNumber,
                             nextItemID: nextItemID, coverCount: allocator.coverCount, ownedGroups: allocator.ownedGroups,
                             releasing: releasing, pages: pageTable.pages.map { $0.ref!.sealed })
        var body = root.encode()
        Sealer.wipe(&root.vaultKey)
        defer { Sealer.wipe(&body) }
        guard body.count <= Format.payloadSize else { throw VaultError.tooLarge("the vault's index has too many pages") }
        let (_, file) = try Sealer.sealEnvelope(kind: .indexRoot, body: body[...], key: .secret(writer.secrets.indexKey),
                                                seal: .indexRoot(slot: slot), random: writer.random)
        try writer.writeSlot(slot, file)
        self.generation = generation
        committedSinceCoverRefresh = !coversRefreshed
        writer.allocator.didCommit()
    }

    /// After the commit point, the other slot. Format 1: group 0's other slot is made only after
    /// the first root, so that a crash never leaves a slot that does not open beside no slot
    /// that does (which would read as damage). Format 2: the copy of the root just committed.
    mutating func writeOtherSlot(writer: inout FileWriter) throws {
        if formatTwo != nil { return try writeCopy(writer: &writer) }
        let other = 1 - generation % Format.indexSlotCount
        if writer.allocator.needsCreate(other) { try writer.createSlot(other, try writer.random.bytes(Format.fileSize)) }
    }

    /// A torn first commit can leave group 0 without its second slot: make it again.
    mutating func restoreMissingSlot(writer: FileWriter) throws {
        guard let slot = missingSlot else { return }
        try writer.storage.create(try writer.name(slot), contents: try writer.random.bytes(Format.fileSize), durable: true)
        try writer.storage.syncFolder()
        missingSlot = nil
    }

    /// Erases the keys (R-MEM-3).
    func wipe() {
        vaultKey.wipe()
        pageKey.wipe()
        formatTwo?.rootKey.wipe()
        indexThree?.entryHashKey.wipe()
    }
}
