import VaultCrypto
import VaultFormat
import VaultStore

/// The remote side of a sync (docs/FORMAT.md §13.11): its unlock record and root under the
/// location "remote", the pages of that root (read from the local storage once the foreign
/// ones are downloaded), and the files this state sends it.
extension VaultState {
    func remoteUnlockName() throws -> String {
        if let received = sharing.received { return try grantName(received) }
        return try FormatTwoKeys.unlockName(locator: session.patternSecrets.locator, location: Label.remoteLocation)
    }

    /// The remote's keys: from its unlock record, or this vault's own when it has none yet.
    mutating func openRemote(unlockFile: [UInt8]?) throws -> RemoteVault {
        guard committer.format == .two else { throw SyncRefusal.formatOne }
        if let received = sharing.received { return try openRemoteGrant(received, file: unlockFile) }
        guard let unlockFile else {
            // After a synced move of an upgraded vault's names the remote is still at the RL
            // before it (tag 4) until its new record is up (§13.12).
            let former = formerRemoteNames
            defer {
                former?.rootLocator.wipeStorage()
                former?.namesKey.wipeStorage()
            }
            let locator = try SecretBytes(copying: former?.rootLocator ?? secrets.locator.copyBytes())
            return try RemoteVault(record: nil, vaultKey: try SecretBytes(copying: committer.vaultKey.copyBytes()),
                                   rootLocator: locator, joins: false)
        }
        let record: UnlockRecord
        do {
            let body = try Sealer.openEnvelope(unlockFile, expectedNonce: nil, kind: .unlockRecord, version: StorageFormat.two.envelopeVersion,
                                               key: .secret(session.patternSecrets.indexKey), seal: .unlock(location: Label.remoteLocation))
            defer { body.wipeStorage() }
            record = try UnlockRecord.decode(body[...])
        } catch FormatError.newerVersion(let version) {
            throw VaultError.newerFormat(version)
        } catch {
            throw SyncRefusal.damagedRemote("its unlock record does not open with this pattern")
        }
        var rotated = false, follows = false, withdrawnTwice = false
        if !isNew {
            var mine = committer.vaultKey.copyBytes()
            defer { Sealer.wipe(&mine) }
            if !ConstantTime.equals(mine, record.vaultKey) {
                // Withdrawn since the last sync (§14.8): the remote holds the keys the owner's
                // record keeps as tag 1027 until this sync moves the remote to the new ones.
                var former = rotatedFrom.map { Array($0[..<Format.keySize]) } ?? []
                defer { Sealer.wipe(&former) }
                if former.isEmpty {
                    // Or withdrawn on another device of the owner: this one follows, if the
                    // remote root under the record's keys lists it (`checkGrantListed`).
                    follows = true
                } else if !ConstantTime.equals(former, record.vaultKey) {
                    // Neither the keys before the withdrawal here nor this device's: another
                    // vault, or one that another device of the owner withdrew from too and
                    // synced (`checkGrantListed` tells them apart; either is refused).
                    withdrawnTwice = true
                }
                rotated = true
            }
        }
        let remote = try RemoteVault(record: record, vaultKey: try SecretBytes(copying: record.vaultKey),
                                     rootLocator: try SecretBytes(copying: record.rootLocator), joins: isNew)
        remote.rotated = rotated
        remote.follows = follows
        remote.withdrawnTwice = withdrawnTwice
        if !isNew && !rotated { remote.recordOutdated = try takeRemoteIdentity(record) }
        if rotated && !follows && !withdrawnTwice, let formatTwo = committer.formatTwo {
            remote.moved = (try SecretBytes(copying: secrets.locator.copyBytes()), try SecretBytes(copying: formatTwo.rootKey.copyBytes()))
        }
        return remote
    }

    /// VK ‖ RL of the vault before the withdrawals since its last sync (tag 1027 of the owner's
    /// record, §14.8): what the remote holds until a sync moves it. Nil when there were none.
    var rotatedFrom: [UInt8]? {
        guard let value = sharing.ownerOptional.first(where: { $0.tag == UnlockRecord.Tag.rotatedFrom })?.value,
              value.count == 2 * Format.keySize else { return nil }
        return value
    }

    /// The remote's slot names of the vault's keys before a withdrawal (tag 1027): they go once
    /// the remote's record names the new keys. Empty when there was no withdrawal since.
    func rotatedRemoteSlotNames() throws -> [String] {
        guard let former = rotatedFrom else { return [] }
        let locator = try SecretBytes(copying: Array(former[Format.keySize...]))
        defer { locator.wipe() }
        return try (0..<UInt8(Format.indexSlotCount)).map {
            try FormatTwoKeys.slotName(rootLocator: locator, slot: $0, location: Label.remoteLocation)
        }
    }

    /// The remote is at the new keys and its former slots are gone: the owner's record is
    /// written again without tag 1027.
    mutating func forgetRotation() throws {
        guard rotatedFrom != nil, let identity = sharing.identity else { return }
        try writeOwnerRecord(identity: identity, optional: VaultRotation.without(sharing.ownerOptional, tag: UnlockRecord.Tag.rotatedFrom))
    }

    /// The newest remote root (`files`: those of `remote.rootSlotNames()`, nil where a slot has
    /// no file).
    func readRemoteRoot(_ remote: RemoteVault, files: [[UInt8]?]) throws {
        let (root, moved) = try Self.newestRemoteRoot(remote, files: files, readsIndexThree: readsIndexThree)
        remote.root = root
        remote.readMoved = moved
        remote.takesInDevice = try takesInUnpublishedDevice(remote)
        try checkGrantListed(remote)
        try refuseJoinOverHeldFiles(remote)
        // This storage names this device's files from its own NKd, which a move of an upgraded
        // vault's names (§13.12) changed since the remote root was written: its pages of this
        // device are read here at those names.
        if let formatTwo = committer.formatTwo, let root = remote.root, !remote.joins, !isNew, Int(formatTwo.localDevice) < root.devices.count,
           remoteListsThisDevice(remote) {
            let local = Int(formatTwo.localDevice)
            root.devices[local].namesKey.wipeStorage()
            remote.root?.devices[local].namesKey = secrets.namesKey.copyBytes()
        }
    }

    /// The remote root among the files of `remote.rootSlotNames()`, and whether it is at RL''s
    /// slots. After a withdrawal the owner's sync writes its root at RL' (generation r + 1 of
    /// the root r it read at RL) before the grants and the record; a sync cut there leaves it,
    /// and a grantee that followed writes after it. So a root at RL' newer than RL's is the
    /// remote's state, which the next sync merges with instead of writing over it; one not
    /// newer is this device's own of a cut sync, which a grantee that has not followed yet
    /// wrote past at RL (its tree includes that own root's: this device committed it).
    static func newestRemoteRoot(_ remote: RemoteVault, files: [[UInt8]?], readsIndexThree: Bool) throws -> (root: IndexRootV2?, moved: Bool) {
        let count = Int(Format.indexSlotCount)
        let root = try newestRemoteRoot(rootKey: remote.rootKey, files: Array(files.prefix(count)), readsIndexThree: readsIndexThree)
        guard let moved = remote.moved, files.count > count,
              let newer = try newestRemoteRoot(rootKey: moved.rootKey, files: Array(files.dropFirst(count)),
                                               readsIndexThree: readsIndexThree) else { return (root, false) }
        guard newer.generation > root?.generation ?? 0 else {
            newer.wipeKeys()
            return (root, false)
        }
        root?.wipeKeys()
        return (newer, true)
    }

    /// The newest root that opens among the slots' files; nil when there are none. Something in
    /// a slot that does not open, with nothing that does, is damage. A root of a newer version
    /// (index 3, FORMAT.md §15.1) stops the sync even beside an older one: a newer release
    /// converted the remote, and a merge with the older root would write over the newer.
    /// `readsIndexThree`: a release that reads index 3 opens such a root (tag 5 among its extensions).
    static func newestRemoteRoot(rootKey: SecretBytes, files: [[UInt8]?], readsIndexThree: Bool = false) throws -> IndexRootV2? {
        var roots: [IndexRootV2] = []
        for (slot, file) in files.enumerated() {
            guard let file else { continue }
            let root: IndexRootV2
            do {
                root = try openRoot(file, slot: UInt64(slot), rootKey: rootKey, readsIndexThree: readsIndexThree)
            } catch FormatError.newerVersion(let version) {
                for root in roots { root.wipeKeys() }
                throw VaultError.newerFormat(version)
            } catch {
                continue
            }
            roots.append(root)
        }
        guard let newest = roots.max(by: { $0.generation < $1.generation }) else {
            if files.contains(where: { $0 != nil }) { throw SyncRefusal.damagedRemote("no root slot opens") }
            return nil
        }
        for root in roots where root.generation != newest.generation { root.wipeKeys() }
        return newest
    }

    /// Names of every device's files as the remote root knows them.
    static func remoteNames(_ remote: RemoteVault, _ root: IndexRootV2) throws -> VaultSecrets {
        try formatTwoSecrets(root, local: 0, rootLocator: try SecretBytes(copying: remote.readLocator.copyBytes()),
                             rootKey: try SecretBytes(copying: remote.readRootKey.copyBytes()))
    }

    /// Whether a file is this device's own: never downloaded, only uploaded.
    func isOwn(_ file: UInt64, joining: Bool) -> Bool {
        !joining && committer.format == .two && FileRef(raw: file).device == committer.formatTwo!.localDevice
    }

    /// The remote root's pages that the local storage lacks under their keys, as far down as
    /// the interior pages here (own, or `fetched` by the calls before) name them: the caller
    /// fetches these and asks again until none is wanted (one call per level, §13.5).
    func remotePagesToFetch(_ remote: RemoteVault, fetched: Set<String>) throws -> [String] {
        guard let root = remote.root else { return [] }
        let names = try Self.remoteNames(remote, root)
        defer { names.wipe() }
        let present = referencedFiles()
        var wanted: [String] = []
        // The refs read from interior pages hold their pages' keys.
        var read: [PageRef] = []
        defer { for ref in read { ref.pageKey.wipeStorage() } }
        var refs = root.top, level = root.topLevel
        while true {
            var below: [PageRef] = []
            for ref in refs {
                let name = try names.fileName(ref.file.raw)
                let use = FileUse(file: ref.file.raw, keyHash: Self.keyHash(ref.pageKey))
                if !isOwn(ref.file.raw, joining: remote.joins) && !fetched.contains(name) {
                    // Held: read here under this key at this name, and not a fill of this sync (§13.11).
                    guard present.contains(use), try self.name(ref.file.raw) == name, try holds(name) else { wanted.append(name); continue }
                } else if remote.replacesRemote && isOwn(ref.file.raw, joining: remote.joins) && !present.contains(use) {
                    try refuseReusedOwnPage(ref, level: level, name: name, version: root.envelopeVersion)
                }
                if level > 0 { below += try interiorPage(ref, level: level, name: name, version: root.envelopeVersion) }
            }
            read += below
            guard level > 0 else { return wanted }
            refs = below
            level -= 1
        }
    }

    /// The refs an interior page of the remote's index holds, read from the local storage.
    private func interiorPage(_ ref: PageRef, level: UInt8, name: String, version: UInt8) throws -> [PageRef] {
        let body = try remotePage(ref, level: level, name: name, version: version)
        guard case .interior(let children) = try IndexPageV2.decode(body[...], level: level) else {
            throw SyncRefusal.damagedRemote("index page \(ref.file) is not an interior page")
        }
        return children
    }

    /// A page of the remote's index opened from the local storage under the key its parent gives.
    func remotePage(_ ref: PageRef, level: UInt8, name: String, version: UInt8) throws -> [UInt8] {
        var key = ref.pageKey
        let slot = try session.arena.allocate(copying: key)
        Sealer.wipe(&key)
        defer { session.arena.free(slot) }
        do {
            guard let file = try storage.read(name) else { throw SyncRefusal.damagedRemote("index page \(ref.file) is missing") }
            return try Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexPage, version: version,
                                           key: .arena(slot, session.arena), seal: .indexPageV2(level: level))
        } catch CryptoError.authenticationFailed {
            throw SyncRefusal.damagedRemote("index page \(ref.file) does not open")
        }
    }

    /// Reads the remote root's records (its pages now in the local storage) into the arena.
    func loadRemoteTree(_ remote: RemoteVault) throws -> [SyncEntry] {
        guard let root = remote.root else { return [] }
        let names = try Self.remoteNames(remote, root)
        defer { names.wipe() }
        let contents: IndexContents
        do {
            let three = try root.entryHashKey().map { try IndexThree(entryHashKey: $0) }
            defer { three?.entryHashKey.wipe() }
            contents = try Self.loadContentsV2(root, storage: storage, secrets: names, arena: session.arena, redirects: try stagedRedirects(),
                                               indexThree: three)
        } catch VaultError.damagedIndex(let why) {
            // Its description ends as a refusal's does ("; nothing was changed"): the reason alone.
            throw SyncRefusal.damagedRemote(why)
        } catch let error as VaultError {
            throw SyncRefusal.damagedRemote("\(error)")
        }
        remote.contents = contents
        // Taken now: the merge and the commit free keys that these records share.
        remote.uses = referencedFiles(pages: contents.pages.map { $0.ref } + contents.interiorPages, items: contents.items)
        if remote.replacesRemote { try refuseReusedOwnFiles(remote, items: contents.items, naming: names) }
        let entries = try Self.entries(contents.items, session.arena)
        remote.baseItems = entries.map {
            SyncBase.Item(id: $0.id, version: $0.version, parent: $0.parent, nameHash: Self.nameHash($0.name), digest: $0.digest)
        }
        return entries
    }

    /// The items a sync compares, each with its first link and digest; several links refused.
    static func entries(_ items: [UInt64: Item], _ arena: SecretArena) throws -> [SyncEntry] {
        try items.filter { $0.key == Format.rootItemID || !$0.value.record.links.isEmpty }.sorted { $0.key < $1.key }.map { id, item in
            guard item.record.links.count <= 1 else { throw SyncRefusal.hardLinks }
            let link = item.record.links.first
            return SyncEntry(id: id, parent: link?.parentID ?? 0, name: link?.name ?? [], type: item.record.type,
                             version: item.record.version, changedBy: item.record.changedBy, digest: syncDigest(id, item, arena))
        }
    }

    /// The remote's unlock record: this vault's VK, RL and its record's FileRef, with the
    /// identity and recipients of the owner's record (§13.11), sealed for location "remote".
    func remoteUnlockFile() throws -> [UInt8] {
        guard let special = committer.formatTwo?.specialFiles.first(where: { $0.role == .ownerUnlock }) else { throw SyncRefusal.formatOne }
        let shared = sharedOwnerTags
        var record = UnlockRecord(vaultKey: committer.vaultKey.copyBytes(), rootLocator: secrets.locator.copyBytes(), ownFile: special.file,
                                  identityKey: shared.identity, optional: shared.optional)
        var body = record.encode()
        defer {
            Sealer.wipe(&body)
            Sealer.wipe(&record.vaultKey)
            Sealer.wipe(&record.rootLocator)
            record.identityKey.wipeStorage()
        }
        return try Sealer.sealEnvelope(kind: .unlockRecord, version: StorageFormat.two.envelopeVersion, body: body[...],
                                       key: .secret(session.patternSecrets.indexKey), seal: .unlock(location: Label.remoteLocation), random: session.random).file
    }

    /// The committed state as remote root `generation`: the original for slot `generation mod 2`
    /// first, then its copy, with their remote names.
    func remoteRootFiles(generation: UInt64) throws -> [(name: String, file: [UInt8])] {
        guard let formatTwo = committer.formatTwo else { throw SyncRefusal.formatOne }
        let root = try committer.rootV2(formatTwo, generation: generation, releasing: [], nextItemID: tree.nextItemID, writer: writer,
                                        arena: session.arena, forRemote: true)
        defer { root.wipeKeys() }
        let slot = generation % Format.indexSlotCount
        return try [slot, 1 - slot].map { slot in
            (try FormatTwoKeys.slotName(rootLocator: secrets.locator, slot: UInt8(slot), location: Label.remoteLocation),
             try Committer.sealRootV2(root, slot: slot, rootKey: formatTwo.rootKey, random: session.random))
        }
    }
}
