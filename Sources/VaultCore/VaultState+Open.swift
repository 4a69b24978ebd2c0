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
        let storage = self.storage, secrets = self.secrets, pageKey = self.pageKey, arena = self.arena
        let contents = try IndexContents(root: root, pageBody: { ref in
            guard let file = try storage.read(try secrets.fileName(ref.fileNumber)) else {
                throw VaultError.damagedIndex("index page \(ref.fileNumber) is missing")
            }
            do {
                return try Sealer.openEnvelope(file, expectedNonce: ref.nonce, kind: .indexPage, key: .secret(pageKey),
                                               label: Label.sealIndexPage, context: [])
            } catch CryptoError.authenticationFailed {
                throw VaultError.damagedIndex("index page \(ref.fileNumber) does not open")
            }
        }, keepKey: { key in
            defer { Sealer.wipe(&key) }
            return try arena.allocate(copying: key)
        })
        items = contents.items
        children = contents.children
        pageTable = PageTable(loaded: contents.pages)
        packs = contents.packs
        allocator = FileAllocator(root: root, used: contents.usedFiles)
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

