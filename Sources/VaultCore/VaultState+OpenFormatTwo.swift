import VaultCrypto
import VaultFormat
import VaultStore

/// Opening a format-2 vault (docs/FORMAT.md §13.9): the unlock record gives VK and RL; RK from
/// VK opens both slots; the newest root gives the device's names key and the page keys; the
/// pages give the records and their keys. The two slots are read against the rollback table of
/// docs/FORMAT-2-DESIGN.md §E.
extension VaultState {
    static func openFormatTwo(_ unlock: (name: String, record: UnlockRecord), storage: any StorageFolder, secrets patternSecrets: VaultSecrets,
                              random: any RandomSource, clock: any VaultClock, options: OpenOptions) throws -> VaultState {
        let record = unlock.record
        defer {
            record.vaultKey.wipeStorage()
            record.rootLocator.wipeStorage()
            record.identityKey.wipeStorage()
        }
        let vaultKey = try SecretBytes(copying: record.vaultKey), rootLocator = try SecretBytes(copying: record.rootLocator)
        let rootKey = try FormatTwoKeys.rootKey(vaultKey: vaultKey)
        var slots: [UInt64??] = [nil, nil]
        var roots: [(slot: UInt64, root: IndexRootV2)] = []
        for slot in 0..<Format.indexSlotCount {
            let name = try FormatTwoKeys.slotName(rootLocator: rootLocator, slot: UInt8(slot))
            guard try storage.entryExists(name) else { continue }
            slots[Int(slot)] = .some(nil)
            do {
                guard let file = try storage.read(name) else { continue }
                let root = try openRoot(file, slot: slot, rootKey: rootKey, readsIndexThree: options.indexThree)
                roots.append((slot, root))
                slots[Int(slot)] = .some(root.generation)
            } catch FormatError.newerVersion(let version) {
                throw VaultError.newerFormat(version)
            } catch {
                continue
            }
        }
        defer { for candidate in roots { candidate.root.wipeKeys() } }
        if roots.isEmpty && slots.contains(where: { $0 != nil }) && isUpgradeRecord(record, patternSecrets: patternSecrets) {
            // An upgrade cut after its unlock record went to its name (§13.9): the slots still
            // hold format 1's roots. The next commit resumes it with this record.
            vaultKey.wipe()
            rootLocator.wipe()
            rootKey.wipe()
            return try openFormatOne(storage: storage, secrets: patternSecrets, random: random, clock: clock, options: options,
                                     resuming: unlock)
        }
        if slots.allSatisfy({ $0 == nil }) {
            // A grant names a vault that exists: never an empty one in its place.
            guard record.role == .owner else { throw SharingError.sharedVaultMissing }
            // A first commit that died before its root: what it left is named from this record's
            // vault key, the slots' stand-ins too (FileWriter.makeGroupZero; no slot is there).
            // It goes, then the record; the vault starts again, empty.
            var state = try newVault(storage: storage, secrets: patternSecrets, random: random, clock: clock, options: options)
            if !options.readOnly {
                let names = VaultSecrets(rootLocator: rootLocator, rootKey: rootKey,
                                         namesKey: try FormatTwoKeys.firstDeviceNamesKey(vaultKey: vaultKey))
                defer { names.wipe() }
                try state.removeLeftovers(releasing: [], names: { $0 < Format.indexSlotCount ? try names.standInName($0) : try names.fileName($0) })
                try storage.remove(unlock.name)
                try storage.syncFolder()
            }
            return state
        }
        guard let newest = roots.max(by: { $0.root.generation < $1.root.generation })?.root else {
            throw VaultError.damagedIndex("a file is at the vault's index name but does not open with its key")
        }
        let arena = SecretArena()
        // Only a device commits its own storage: the root's writer is this device (§13.11).
        let local = newest.writerDevice, device = newest.devices[Int(local)]
        let stateSecrets = try formatTwoSecrets(newest, local: local, rootLocator: rootLocator, rootKey: rootKey)
        // EHK leaves the extensions for locked memory (index 3, §15.3).
        let entryHashKey = try newest.extensions.first { $0.tag == IndexRootV3.entryHashKeyTag }.map { try SecretBytes(copying: $0.value) }
        var formatTwo = FormatTwoRoot(rootKey: rootKey, deviceID: device.deviceID, itemPrefix: device.itemPrefix, deviceName: device.name,
                                      specialFiles: newest.specialFiles,
                                      extensions: newest.extensions.filter { $0.tag != IndexRootV3.entryHashKeyTag }, localDevice: local)
        formatTwo.devices = newest.devices.map { var entry = $0; entry.namesKey = []; return entry }
        var committer = try Committer(vaultKey: vaultKey, generation: newest.generation, formatTwo: formatTwo)
        if let entryHashKey { committer.indexThree = try IndexThree(entryHashKey: entryHashKey) }
        // §15.1: automatic only where no other device or grantee may run a release without index 3.
        committer.convertsToIndexThree = options.indexThree && entryHashKey == nil && formatTwo.indexThreeHold.isEmpty
        let contents: IndexContents
        // Index 3 (§15.4): free files and packs from the file blocks, and the sync base, whose
        // pins the blocks hold, not read until something depends on them (`readPinsIfUnread`).
        // fsck's open takes them from the references, which its audit holds the records against.
        let readsReferences = entryHashKey == nil || options.defersIndexChecks
        var baseFiles: Set<UInt64> = [], pinned: Set<UInt64> = [], packs: [UInt64: PackInfo]?
        var openedThroughFormer = false
        // An upgraded vault's pattern change moving its names (§13.12): its new slots' files are
        // not free, and a slot missing at its old name is not made again.
        var moveFiles: Set<UInt64> = []
        // A sync's downloads staged for this root (tag 1025, §13.11), put in place before any
        // page is read; the staged files are not free before the next commit.
        var stagedFiles: Set<UInt64> = [], reading = storage
        // Pages on demand: the table of listed leaves, those read, and where the rest come from.
        var inPart: (table: PageTable, leaves: [Int], source: IndexLeafSource)?
        do {
            // Role 3: a pattern change in progress still lists the old pattern's record (§13.12).
            guard let found = newest.specialFiles.first(where: { special in
                special.file == record.ownFile && (record.role == .grant ? special.role == .grant
                    : special.role == .ownerUnlock || (special.role == .retiredOwner && FileName.encode(special.name) == unlock.name))
            }) else {
                // A grant no root lists: a share cut short, or one withdrawn.
                guard record.role == .owner else { throw SharingError.noGrant }
                throw VaultError.damagedIndex("the root does not list the unlock record that found it")
            }
            openedThroughFormer = found.role == .retiredOwner
            if let move = try newest.namesMove() {
                defer { move.wipeKeys() }
                try findMovedNames(newest, move, secrets: stateSecrets, storage: storage)
                moveFiles = Set(move.slotFiles.map(\.raw))
            }
            if options.readOnly {
                reading = try stagedReads(newest, storage: storage, secrets: stateSecrets)
            } else {
                stagedFiles = try finishStagedAtOpen(newest, storage: storage, secrets: stateSecrets, random: random)
            }
            if options.loadsOnDemand && !readsReferences, let three = committer.indexThree {
                let part = try openInPart(newest, storage: reading, secrets: stateSecrets, arena: arena, entryHash: three.entryHash)
                contents = part.contents
                inPart = (part.table, part.leaves, part.source)
            } else {
                contents = try loadContentsV2(newest, storage: reading, secrets: stateSecrets, arena: arena, indexThree: committer.indexThree,
                                              keepsUnreached: options.defersIndexChecks)
            }
            if readsReferences {
                if let base = try readSyncBase(newest, storage: storage, secrets: stateSecrets) {
                    baseFiles = Set(base.files)
                    pinned = Set(base.base.pinned)
                }
            } else {
                baseFiles = Set(try syncBasePieceFiles(newest.extensions))
                // Another device's packs are its own to describe (§15.4): from the references.
                // (Held in part, from the pack entries alone, below.)
                if inPart == nil {
                    packs = try contents.derived.packs(device: local)
                        .merging(contents.packs.filter { FileRef(raw: $0.key).device != local }) { own, _ in own }
                }
            }
        } catch {
            arena.wipeAll()
            committer.wipe()
            stateSecrets.wipe()
            patternSecrets.wipe()
            switch error {
            case let error as VaultError: throw error
            case let error as SharingError: throw error
            case FormatError.newerVersion(let version): throw VaultError.newerFormat(version)
            default: throw VaultError.damagedIndex("\(error)")
            }
        }
        committer.useLoaded(inPart?.table ?? PageTable(loaded: contents))
        // Held in part, the records come with their leaves (`adopt` below).
        if inPart == nil {
            committer.indexThree?.records = contents.derived
            committer.indexThree?.foreign = contents.foreignRecords
        }
        if slots.contains(where: { $0 == nil }) && moveFiles.isEmpty { committer.missingSlot = slots[0] == nil ? 0 : 1 }
        var used = baseFiles.union(moveFiles).union(stagedFiles)
        if readsReferences {
            used.formUnion(contents.usedFiles)
        } else {
            used.formUnion(contents.derived.heldFiles(device: local))
            used.formUnion(committer.pageTable.pages.compactMap { $0.ref?.fileNumber } + committer.pageTable.parentRefs.map(\.fileNumber))
        }
        var state = VaultState(storage: reading, secrets: stateSecrets, patternSecrets: patternSecrets, random: random, clock: clock,
                               readOnly: options.readOnly, cacheBytes: options.cacheBytes,
                               allocator: FileAllocator(device: device, index: local, used: used, pinned: pinned),
                               nextItemID: device.nextItemID,
                               committer: committer, contents: inPart == nil ? contents : IndexContents(), packs: packs, arena: arena)
        if let inPart {
            state.leafSource = inPart.source
            // Each pack as its entry gives it, its members from its list when needed, its end
            // the entry's: no pack's members to load at the first commit.
            let entries = contents.derived.packEntries(device: local)
            state.packs = PackStore(packs: entries, endsFromMembers: false, unlisted: Set(entries.keys))
            state.tree.holdInPart()
            state.adopt(contents, leaves: inPart.leaves)
        }
        state.syncBases.pinsUnread = !readsReferences && !baseFiles.isEmpty
        // A move takes the old slots away one after the other: a missing one is no damage then.
        // Nor is a slot missing next to a root that names old slots to retire: a withdrawal or
        // a follow cut between its two slots (§14.8), whose writing open lends a file to it.
        let retiring = newest.extensions.contains { $0.tag == IndexRootV2.retiringSlotsTag }
        state.notices.rollbackWarning = (moveFiles.isEmpty && !retiring) || !slots.contains(where: { $0 == nil })
            ? FormatTwoVault.rollbackWarning(slots) : nil
        state.notices.openedThroughFormerPattern = openedThroughFormer
        if record.role == .owner { state.sharing = try VaultSharing(ownerRecord: record) }
        state.packs.pinWhole(pinned)
        if let three = state.committer.indexThree, !options.defersIndexChecks {
            // Read whole: every rule of §15.6 across records, before anything is written (fsck's
            // open defers them to its own check, which reports each and can repair them; held in
            // part, each leaf's own rules are checked as it loads, the rest is fsck's).
            do {
                if inPart == nil { try state.checkRecords(three.records, entryHash: three.hash) }
                state.tree.recordsJournal = state.committer.indexThree?.startJournal()
                // Checked bit by bit against what they hold, unless set bits stood in for the pins.
                if !state.syncBases.pinsUnread {
                    let basis = IndexRecordsV3.FilesBasis(indexFiles: state.indexFiles, rootHeld: state.rootHeldFiles)
                    state.committer.indexThree?.filesBasis = basis
                }
            } catch {
                state.wipe()
                throw error
            }
        }
        state.notices.releasedFilesLeft = Set(device.releasing.map { $0 + state.writer.allocator.base })
        if !options.readOnly {
            // A step left in flight is finished here, changing names, slots and extensions: the
            // pins of the base as committed first. A plain open reads none (§15.4).
            let inFlight = !moveFiles.isEmpty || !stagedFiles.isEmpty || retiring || state.committer.missingSlot != nil
                || !device.releasing.isEmpty || newest.specialFiles.contains { $0.role == .retiredOwner }
            if inFlight {
                try state.loadWholeIndex()
                try state.readPinsIfUnread()
            }
            try state.removeLeftovers(releasing: device.releasing.map { $0 + state.writer.allocator.base })
            try state.forgetStagedDownloads(stagedFiles)
            try state.repairOtherDevicesFiles()
            try state.restoreMissingSlot()
            // Only the owner finishes a pattern change: its step 5a seals grants with the identity.
            if record.role == .owner { try state.finishPatternChange() }
            try state.retireFollowedSlots()
        }
        return state
    }

    /// Pages on demand: the root's interior pages read and its leaves listed, then the leaves
    /// an open needs read (`readLeaves`): the root folder's and the writer's file blocks
    /// (§15.4: its free numbers, and its packs' fills and ends; their member lists when used).
    static func openInPart(_ root: IndexRootV2, storage: any StorageFolder, secrets: VaultSecrets, arena: SecretArena,
                           entryHash: EntryHash) throws -> (contents: IndexContents, table: PageTable, leaves: [Int], source: IndexLeafSource) {
        var listed = IndexContents()
        let pageBody = pageReader(storage: storage, secrets: secrets, arena: arena, version: IndexRootV3.envelopeVersion)
        let leaves = try listed.walk(root, pageBody: pageBody, keepKey: keyKeeper(arena))
        let table = PageTable(listed: leaves.map { ($0.firstKey, $0.ref) }, parents: listed.parents,
                              orphaned: listed.parents.isEmpty ? listed.interiorPages : [])
        let source = IndexLeafSource(try IndexRootV3(root))
        let device = UInt64(root.writerDevice) << 48
        let ranges = [table.leaves(from: .item(Format.rootItemID), below: .item(Format.rootItemID + 1)),
                      table.leaves(from: .item(device), below: .item(device | 1 << 32))]
        let wanted = runs(ranges.compactMap { $0 }.flatMap { Array($0) }, of: table.pages)
        var contents = try readLeaves(wanted, of: table.pages, source: source, entryHash: entryHash, storage: storage, secrets: secrets, arena: arena)
        contents.parents = listed.parents
        contents.interiorPages = listed.interiorPages
        return (contents, table, wanted, source)
    }

    /// A root slot's file opened with RK: version 2, or version 3 (index 3, §15.5) when the
    /// open reads it; a root of a newer version otherwise is refused as made by a newer DotSafe.
    static func openRoot(_ file: [UInt8], slot: UInt64, rootKey: SecretBytes, readsIndexThree: Bool) throws -> IndexRootV2 {
        do {
            let body = try Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexRoot, version: StorageFormat.two.envelopeVersion,
                                               key: .secret(rootKey), seal: .indexRootV2(slot: slot))
            defer { body.wipeStorage() }  // names and page keys
            return try IndexRootV2.decode(body[...])
        } catch FormatError.newerVersion(let version) where readsIndexThree && version == IndexRootV3.envelopeVersion {
            let body = try Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexRoot, version: version,
                                               key: .secret(rootKey), seal: .indexRootV2(slot: slot))
            defer { body.wipeStorage() }
            return try IndexRootV3.decode(body[...]).root
        }
    }

    /// RL, RK and the names keys of every device of a root; `local` names its files from `namesKey`.
    static func formatTwoSecrets(_ root: IndexRootV2, local: UInt16, rootLocator: SecretBytes, rootKey: SecretBytes) throws -> VaultSecrets {
        let secrets = VaultSecrets(rootLocator: rootLocator, rootKey: rootKey,
                                   namesKey: try SecretBytes(copying: root.devices[Int(local)].namesKey), localDevice: local)
        for (index, device) in root.devices.enumerated() where index != Int(local) {
            secrets.addDevice(UInt16(index), namesKey: try SecretBytes(copying: device.namesKey))
        }
        return secrets
    }

    /// Every page of a root, read from `storage` at the names `secrets` give, opened with the keys
    /// the root and pages record (kept in `arena`).
    /// `redirects`: names whose bytes lie at another name (a sync's staged downloads, §13.11).
    static func loadContentsV2(_ root: IndexRootV2, storage: any StorageFolder, secrets: VaultSecrets,
                               arena: SecretArena, redirects: [String: String] = [:], indexThree: IndexThree? = nil,
                               keepsUnreached: Bool = false) throws -> IndexContents {
        let three = try indexThree.map { (root: try IndexRootV3(root), hash: $0.entryHash) }
        let version = three == nil ? StorageFormat.two.envelopeVersion : IndexRootV3.envelopeVersion
        let pageBody = pageReader(storage: storage, secrets: secrets, arena: arena, redirects: redirects, version: version)
        return try IndexContents(rootV2: root, indexThree: three, keepsUnreached: keepsUnreached && three != nil, pageBody: pageBody,
                                 keepKey: keyKeeper(arena))
    }

    /// The files of the pieces of the sync base that a root's extensions record, without reading them.
    static func syncBasePieceFiles(_ extensions: [IndexRootV2.Extension]) throws -> [UInt64] {
        guard let value = extensions.first(where: { $0.tag == SyncBase.extensionTag })?.value else { return [] }
        let header = try SyncBase.Header.decode(value)
        for piece in header.pieces { piece.key.wipeStorage() }
        return header.pieces.map(\.file.raw)
    }

    /// The sync base a root records (extension tag 1, §13.11) and the files of its pieces; nil
    /// when the vault never synced.
    static func readSyncBase(_ root: IndexRootV2, storage: any StorageFolder,
                             secrets: VaultSecrets) throws -> (header: SyncBase.Header, base: SyncBase, files: [UInt64])? {
        guard let value = root.extensions.first(where: { $0.tag == SyncBase.extensionTag })?.value else { return nil }
        let header = try SyncBase.Header.decode(value)
        defer { for piece in header.pieces { piece.key.wipeStorage() } }
        var stream: [UInt8] = []
        for (index, piece) in header.pieces.enumerated() {
            guard piece.file.device == root.writerDevice, root.fileIsValid(piece.file),
                  let file = try storage.read(try secrets.fileName(piece.file.raw)) else {
                throw VaultError.damagedIndex("the sync base's piece \(piece.file) is missing")
            }
            let key = try SecretBytes(copying: piece.key)
            defer { key.wipe() }
            do {
                stream += try Sealer.openEnvelope(file, expectedNonce: nil, kind: .syncBase, version: StorageFormat.two.envelopeVersion,
                                                  key: .secret(key), seal: .syncBase(piece: index))
            } catch CryptoError.authenticationFailed {
                throw VaultError.damagedIndex("the sync base's piece \(piece.file) does not open")
            }
        }
        return (header, try SyncBase.decode(stream), header.pieces.map(\.file.raw))
    }

    /// An upgraded vault's record: its RL is the pattern's locator (a new vault's is random).
    private static func isUpgradeRecord(_ record: UnlockRecord, patternSecrets: VaultSecrets) -> Bool {
        var locator = patternSecrets.locator.copyBytes()
        defer { Sealer.wipe(&locator) }
        return ConstantTime.equals(record.rootLocator, locator)
    }
}
