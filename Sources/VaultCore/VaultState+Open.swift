import VaultCrypto
import VaultFormat
import VaultStore

extension VaultState {
    struct OpenOptions {
        var readOnly = false
        var cacheBytes = 256 << 20
        var owner: (uid: UInt32, gid: UInt32) = (0, 0)
        /// The format a new vault is created in; format 1 only for tests of format-1 vaults.
        var newVaultFormat = StorageFormat.two
        /// Whether a format-1 vault opened for writing is upgraded to format 2 at its first
        /// commit (docs/FORMAT.md §13.9); off only in tests that show what format 1 does, or
        /// play a release without the upgrade.
        var upgradesFormatOne = true
        /// Index version 3 written for a new vault and read (`Vault.Options.indexThree`).
        var indexThree = false
        /// fsck's open (`Vault.Options.defersIndexChecks`).
        var defersIndexChecks = false
        /// Pages on demand (`Vault.Options.loadsOnDemand`).
        var loadsOnDemand = false
    }

    /// Opens the vault that these secrets find (docs/FORMAT.md §9.1): its newest root and every
    /// page, checked against every MUST-reject rule; or a new, empty vault when nothing is at
    /// its index names. Anything there that does not open is damage, never an empty vault.
    static func open(storage: any StorageFolder, secrets: VaultSecrets, random: any RandomSource,
                     clock: any VaultClock, options: OpenOptions) throws -> VaultState {
        // Copies a re-creation cut short left (§11.3); they are no vault's files.
        if !options.readOnly { try storage.removeRecreationLeftovers() }
        if let unlock = try FormatTwoVault.readUnlock(storage: storage, patternSecrets: secrets) {
            // A withdrawal cut short is finished (or undone) first (§14.8).
            let record = try VaultRotation.resume(unlock.record, storage: storage, patternSecrets: secrets, readOnly: options.readOnly,
                                                  readsIndexThree: options.indexThree, random: random)
            return try openFormatTwo((unlock.name, record), storage: storage, secrets: secrets, random: random, clock: clock, options: options)
        }
        return try openFormatOne(storage: storage, secrets: secrets, random: random, clock: clock, options: options)
    }

    /// A format-1 vault (§9.1), or a new one when nothing is at its index names. Opened for
    /// writing, it is upgraded to format 2 at its first commit (`startUpgrade`); `resuming`: an
    /// upgrade's unlock record, found at its name beside slots that hold format-1 roots only
    /// (an upgrade cut after its step 2, §13.9).
    static func openFormatOne(storage: any StorageFolder, secrets: VaultSecrets, random: any RandomSource, clock: any VaultClock,
                              options: OpenOptions, resuming: (name: String, record: UnlockRecord)? = nil) throws -> VaultState {
        var present: [UInt64] = []
        var roots: [(slot: UInt64, root: IndexRoot)] = []
        for slot in 0..<Format.indexSlotCount {
            let name = try secrets.fileName(slot)
            guard try storage.entryExists(name) else { continue }
            present.append(slot)
            do {
                guard let file = try storage.read(name) else { continue }
                let body = try Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexRoot, key: .secret(secrets.indexKey),
                                                   seal: .indexRoot(slot: slot))
                defer { body.wipeStorage() }  // it holds the vault key
                roots.append((slot, try IndexRoot.decode(body[...])))
            } catch FormatError.newerVersion(let version) {
                throw VaultError.newerFormat(version)
            } catch {
                continue
            }
        }
        if present.isEmpty {
            return try newVault(storage: storage, secrets: secrets, random: random, clock: clock, options: options)
        }
        guard let newest = roots.max(by: { $0.root.generation < $1.root.generation }) else {
            throw VaultError.damagedIndex("a file is at the vault's index name but does not open with this pattern")
        }
        if roots.count == 2 && roots[0].root.generation == roots[1].root.generation {
            throw VaultError.damagedIndex("both index slots hold generation \(newest.root.generation)")
        }
        var root = newest.root
        let vaultKey = try SecretBytes(copying: root.vaultKey)
        // Both roots' keys, and the copies `newest` and `root` share with them.
        for candidate in roots { candidate.root.vaultKey.wipeStorage() }
        root.vaultKey = []
        let arena = SecretArena()
        var committer = try Committer(vaultKey: vaultKey, generation: root.generation)
        let contents: IndexContents
        do {
            contents = try load(root, storage: storage, secrets: secrets, pageKey: committer.pageKey, arena: arena)
        } catch {
            arena.wipeAll()
            committer.wipe()
            secrets.wipe()
            switch error {
            case let error as VaultError: throw error
            case FormatError.newerVersion(let version): throw VaultError.newerFormat(version)
            default: throw VaultError.damagedIndex("\(error)")
            }
        }
        committer.useLoaded(PageTable(loaded: contents.pages))
        if present.count < Format.indexSlotCount { committer.missingSlot = 1 - newest.slot }
        var state = VaultState(storage: storage, secrets: secrets, patternSecrets: secrets, random: random, clock: clock,
                               readOnly: options.readOnly, cacheBytes: options.cacheBytes,
                               allocator: FileAllocator(root: root, used: contents.usedFiles), nextItemID: root.nextItemID,
                               committer: committer, contents: contents, arena: arena)
        state.notices.releasedFilesLeft = Set(root.releasing)
        if !options.readOnly {
            try state.removeLeftovers(releasing: root.releasing)
            try state.committer.restoreMissingSlot(writer: state.writer)
        }
        if options.upgradesFormatOne && (!options.readOnly || resuming != nil) {
            try state.startUpgrade(resuming: resuming)
            // Upgraded and converted by the same commit (§15.1).
            state.committer.convertsToIndexThree = options.indexThree
        }
        return state
    }

    /// A new, empty vault: nothing at its names. A format-1 first commit that died left files
    /// named from the pattern: they go (§9.3).
    static func newVault(storage: any StorageFolder, secrets: VaultSecrets, random: any RandomSource, clock: any VaultClock,
                         options: OpenOptions) throws -> VaultState {
        var state = try VaultState(newVaultIn: storage, secrets: secrets, random: random, clock: clock, readOnly: options.readOnly,
                                   cacheBytes: options.cacheBytes, owner: options.owner, format: options.newVaultFormat)
        if options.indexThree && options.newVaultFormat == .two {
            // EHK is random, not derived from VK: a withdrawal changes VK and must not reorder every folder (§15.3).
            state.committer.indexThree = try IndexThree(entryHashKey: SecretBytes.random(count: Format.keySize, using: random))
        }
        // Numbers 0 and 1 at NK's file names, not at the slots' (none is there): the stand-ins of a
        // join of a vault upgraded from format 1 that was killed before its commit point, whose
        // device 0 files (from NK, number 2 up) go as a first commit's (§9.3, §13.12).
        if !options.readOnly {
            let standIns = try (0..<Format.indexSlotCount).map { try secrets.standInName($0) }
            try state.removeLeftovers(releasing: [], names: { $0 < Format.indexSlotCount ? standIns[Int($0)] : try secrets.fileName($0) })
        }
        return state
    }

    /// Reads every page, builds the items, and checks the rules that span records (§6.1).
    private static func load(_ root: IndexRoot, storage: any StorageFolder, secrets: VaultSecrets, pageKey: SecretBytes,
                             arena: SecretArena) throws -> IndexContents {
        try IndexContents(root: root, pageBody: { ref in
            guard let file = try storage.read(try secrets.fileName(ref.fileNumber)) else {
                throw VaultError.damagedIndex("index page \(ref.fileNumber) is missing")
            }
            do {
                return try Sealer.openEnvelope(file, expectedNonce: ref.nonce, kind: .indexPage, key: .secret(pageKey), seal: .indexPage)
            } catch CryptoError.authenticationFailed {
                throw VaultError.damagedIndex("index page \(ref.fileNumber) does not open")
            }
        }, keepKey: keyKeeper(arena))
    }

    /// §9.3: files a crash left behind are this vault's by name, and removed.
    mutating func removeLeftovers(releasing: [UInt64]) throws {
        let secrets = self.secrets
        try removeLeftovers(releasing: releasing, names: { try secrets.fileName($0) })
    }

    /// The same with the names of `names`: those of another key (format 2's first commit, §13.4).
    mutating func removeLeftovers(releasing: [UInt64], names name: (UInt64) throws -> String) throws {
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
        var number = isNew ? writer.allocator.base : writer.allocator.nextFileNumber
        let end = number + UInt64(existing.count)
        while number < end {
            let candidate = try name(number)
            if existing.contains(candidate) { try removeIfOurs(candidate) }
            number += 1
        }
        if removed { try storage.syncFolder() }
    }
}
