import VaultCrypto
import VaultFormat
import VaultStore

extension VaultState {
    struct OpenOptions {
        var readOnly = false
        var cacheBytes = 256 << 20
        var owner: (uid: UInt32, gid: UInt32) = (0, 0)
    }

    /// Opens the vault that these secrets find (docs/FORMAT.md §9.1): its newest root and every
    /// page, checked against every MUST-reject rule; or a new, empty vault when nothing is at
    /// its index names. Anything there that does not open is damage, never an empty vault.
    static func open(storage: any StorageFolder, secrets: VaultSecrets, random: any RandomSource,
                     clock: any VaultClock, options: OpenOptions) throws -> VaultState {
        var present: [UInt64] = []
        var roots: [(slot: UInt64, root: IndexRoot)] = []
        for slot in 0..<Format.indexSlotCount {
            let name = try secrets.fileName(slot)
            guard try storage.entryExists(name) else { continue }
            present.append(slot)
            do {
                guard let file = try storage.read(name) else { continue }
                let body = try Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexRoot, key: .secret(secrets.indexKey),
                                                   label: Label.sealIndexRoot, context: [UInt8(slot)])
                roots.append((slot, try IndexRoot.decode(body[...])))
            } catch FormatError.newerVersion(let version) {
                throw VaultError.newerFormat(version)
            } catch {
                continue
            }
        }
        if present.isEmpty {
            var state = try VaultState(newVaultIn: storage, secrets: secrets, random: random, clock: clock,
                                       readOnly: options.readOnly, cacheBytes: options.cacheBytes, owner: options.owner)
            if !options.readOnly { try state.removeLeftovers(releasing: []) }
            return state
        }
        guard let newest = roots.max(by: { $0.root.generation < $1.root.generation }) else {
            throw VaultError.damagedIndex("a file is at the vault's index name but does not open with this pattern")
        }
        if roots.count == 2 && roots[0].root.generation == roots[1].root.generation {
            throw VaultError.damagedIndex("both index slots hold generation \(newest.root.generation)")
        }
        var root = newest.root
        let vaultKey = try SecretBytes(copying: root.vaultKey)
        Sealer.wipe(&root.vaultKey)
        var state = try VaultState(storage: storage, secrets: secrets, random: random, clock: clock,
                                   readOnly: options.readOnly, cacheBytes: options.cacheBytes, root: root, vaultKey: vaultKey)
        do {
            try state.load(root)
        } catch let error as VaultError {
            state.wipe()
            throw error
        } catch FormatError.newerVersion(let version) {
            state.wipe()
            throw VaultError.newerFormat(version)
        } catch {
            state.wipe()
            throw VaultError.damagedIndex("\(error)")
        }
        if present.count < Format.indexSlotCount { state.missingSlot = 1 - newest.slot }
        if !options.readOnly {
            try state.removeLeftovers(releasing: root.releasing)
            try state.restoreMissingSlot()
        }
        return state
    }

    /// Reads every page, builds the items, and checks the rules that span records (§6.1).
    private mutating func load(_ root: IndexRoot) throws {
        var loadedPages: [(ref: SealedRef, keys: [RecordKey])] = []
        var segments: [(key: RecordKey, entries: [ChunkSegment.Entry])] = []
        var lastKey: RecordKey?
        for ref in root.pages {
            guard let file = try storage.read(try name(ref.fileNumber)) else {
                throw VaultError.damagedIndex("index page \(ref.fileNumber) is missing")
            }
            let body: [UInt8]
            do {
                body = try Sealer.openEnvelope(file, expectedNonce: ref.nonce, kind: .indexPage, key: .secret(pageKey),
                                               label: Label.sealIndexPage, context: [])
            } catch CryptoError.authenticationFailed {
                throw VaultError.damagedIndex("index page \(ref.fileNumber) does not open")
            }
            let records = try IndexPage.decode(body[...])
            if let lastKey, !(lastKey < records[0].key) { throw VaultError.damagedIndex("index pages out of order") }
            lastKey = records.last!.key
            for record in records {
                if record.key.sub == 0 {
                    var decoded = try ItemRecord.decode(record.value)
                    var item = Item(record: decoded)
                    if decoded.type == .file {
                        item.key = try arena.allocate(copying: decoded.itemKey)
                        Sealer.wipe(&decoded.itemKey)
                        item.record.itemKey = []
                    }
                    guard record.key.itemID >= Format.rootItemID, record.key.itemID < root.nextItemID else {
                        throw VaultError.damagedIndex("item \(record.key.itemID) beyond nextItemID")
                    }
                    items[record.key.itemID] = item
                } else {
                    segments.append((record.key, try ChunkSegment.decode(record.value)))
                }
            }
            loadedPages.append((ref, records.map(\.key)))
        }
        pageTable = PageTable(loaded: loadedPages)
        for (key, entries) in segments {
            guard let item = items[key.itemID], item.isFile, item.record.layout == .chunked else {
                throw VaultError.damagedIndex("chunk map of item \(key.itemID), which is not a chunked file")
            }
            let base = Int(key.sub - 1) * Format.chunksPerSegment
            for entry in entries {
                let index = base + entry.indexInSegment
                guard index < item.chunkCount else { throw VaultError.damagedIndex("chunk \(index) beyond the size of item \(key.itemID)") }
                items[key.itemID]!.chunks[index] = entry.ref
            }
        }
        try buildFolders()
        try checkFileNumbers(root)
    }

    /// Folder contents from the links, rejecting duplicate names, non-folder parents, folders with
    /// other than one link, and items not reachable from the root folder (R-SEC-3).
    private mutating func buildFolders() throws {
        guard let root = items[Format.rootItemID], root.isFolder, root.record.links.isEmpty else {
            throw VaultError.damagedIndex("the root folder is missing or malformed")
        }
        children = [:]
        for (id, item) in items where item.isFolder { children[id] = [:] }
        for (id, item) in items {
            if id != Format.rootItemID && item.record.links.isEmpty { throw VaultError.damagedIndex("item \(id) has no name") }
            if item.isFolder && id != Format.rootItemID && item.record.links.count != 1 {
                throw VaultError.damagedIndex("folder \(id) has \(item.record.links.count) names")
            }
            for link in item.record.links {
                guard children[link.parentID] != nil else { throw VaultError.damagedIndex("item \(id) is in \(link.parentID), not a folder") }
                guard children[link.parentID]![link.name] == nil else { throw VaultError.damagedIndex("a name appears twice in folder \(link.parentID)") }
                children[link.parentID]![link.name] = id
            }
        }
        var reached: Set<UInt64> = [Format.rootItemID]
        var queue: [UInt64] = [Format.rootItemID]
        while let folder = queue.popLast() {
            for child in children[folder]!.values where reached.insert(child).inserted {
                if items[child]!.isFolder { queue.append(child) }
            }
        }
        guard reached.count == items.count else { throw VaultError.damagedIndex("items not reachable from the root folder") }
    }

    /// Every file number used once, owned, and not a slot or cover; builds the allocator and packs.
    private mutating func checkFileNumbers(_ root: IndexRoot) throws {
        var used = Set<UInt64>()
        let reserved = Format.indexSlotCount + UInt64(root.coverCount)
        func use(_ number: UInt64, _ what: String) throws {
            guard number >= reserved, root.owns(number) else { throw VaultError.damagedIndex("\(what) in file \(number), which is not the vault's") }
            guard used.insert(number).inserted else { throw VaultError.damagedIndex("file \(number) used twice") }
        }
        for page in root.pages { try use(page.fileNumber, "index page") }
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
        allocator = FileAllocator(root: root, used: used)
    }

    /// §9.3: files a crash left behind are this vault's by name, and removed.
    mutating func removeLeftovers(releasing: [UInt64]) throws {
        var removed = false
        /// Removes a leftover of ours. Something at the name that is not a regular file (a
        /// folder, a link) was not made by DotSafe: it is left alone and does not stop the open
        /// (R-SEC-4).
        func removeIfOurs(_ name: String) throws {
            do {
                try storage.remove(name)
                removed = true
            } catch StoreError.unusableFile {
            }
        }
        for number in releasing where try storage.entryExists(try name(number)) {
            try removeIfOurs(try name(number))
        }
        let existing = Set(try storage.listAllNames())
        // Numbers from the committed nextFileNumber up: for a vault that never committed that is
        // 0, since its group 0 (covers, data, random fill) may have been made by a first commit
        // that died before its root (the allocator of a new vault has group 0 already).
        var number = isNew ? 0 : allocator.nextFileNumber
        let end = number + UInt64(existing.count)
        while number < end {
            let candidate = try name(number)
            if existing.contains(candidate) { try removeIfOurs(candidate) }
            number += 1
        }
        if removed { try storage.syncFolder() }
    }

    /// A torn first commit can leave group 0 without its second slot: make it again.
    mutating func restoreMissingSlot() throws {
        guard let slot = missingSlot else { return }
        try storage.create(try name(slot), contents: try random.bytes(Format.fileSize), durable: true)
        try storage.syncFolder()
        missingSlot = nil
    }
}

