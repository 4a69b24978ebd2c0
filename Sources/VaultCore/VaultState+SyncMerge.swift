import VaultCrypto
import VaultFormat
import VaultStore

/// Sync's step 4 (docs/SYNC-DESIGN.md §3.4, FORMAT.md §13.11): the state becomes the merged
/// one, built on the remote root's pages (only records that differ from the remote's are
/// written again), with this device's entry in the remote's device table. Nothing is written
/// before `commit`; what the old local root referenced is released then.
extension VaultState {
    /// Replaces the tree by `merged`; returns the names of other devices' files it needs that
    /// the local storage lacks under their keys (to download before `finishMerge`).
    mutating func applyMerge(_ remote: RemoteVault, merged: [MergedItem], nextItemID: UInt64, deviceName: [UInt8]) throws -> [String] {
        guard let root = remote.root, let remoteContents = remote.contents, let old = committer.formatTwo else {
            throw SyncRefusal.damagedRemote("its root was not read")
        }
        let oldItems = tree.allItems, oldUses = referencedFiles(), joining = remote.joins
        // A file is held only at the name the last commit read it at (FORMAT.md §13.11): a
        // move gives another device's files new names, where a killed sync may have filled.
        var oldNames: [UInt64: String] = [:]
        for use in oldUses where !isOwn(use.file, joining: joining) { oldNames[use.file] = try name(use.file) }
        let oldDigests = oldItems.keys.map { ($0, Self.syncDigest($0, oldItems[$0]!, session.arena)) }
        let oldDevices = old.devices
        if joining {
            try join(remote, root, deviceName: deviceName)
        } else {
            let local = old.localDevice
            guard remoteListsThisDevice(remote) else { throw SyncRefusal.unknownDevice }
            // A grantee's device following a withdrawal takes the new keys (§14.8).
            let moved = remote.follows ? try followRotation(remote) : nil
            for (index, device) in root.devices.enumerated() where index != Int(local) {
                secrets.addDevice(UInt16(index), namesKey: try SecretBytes(copying: device.namesKey))
            }
            var formatTwo = moved?.formatTwo ?? old
            formatTwo.devices = root.devices.map { var entry = $0; entry.namesKey = []; return entry }
            // A join never published comes in at the end of the remote's table (§13.12), with
            // every other device there the remote lacks, on a remote that replaces the old one.
            if remote.takesInDevice { formatTwo.devices += old.devices[root.devices.count...] }
            // Special files merge as the device table does: each device's from the side that is
            // that device (a grant another device wrote comes from the remote).
            // After a withdrawal on another device of the owner, all of them are the remote's;
            // after one here, every grant is this storage's: the withdrawal sealed them all
            // again, another device's too, and the remote's still name the old keys (§14.8).
            formatTwo.specialFiles = ownerFollows(remote) ? root.specialFiles
                : remote.movesRemote ? root.specialFiles.filter { $0.file.device != local && !$0.isGrantFile }
                    + old.specialFiles.filter { $0.file.device == local || $0.isGrantFile }
                : root.specialFiles.filter { $0.file.device != local } + old.specialFiles.filter { $0.file.device == local }
            formatTwo.rootDue = true
            var next = try Committer(vaultKey: moved?.vaultKey ?? committer.vaultKey, generation: committer.generation, formatTwo: formatTwo)
            next.useLoaded(PageTable(loaded: remoteContents))
            try next.takeIndexVersion(of: root, contents: remoteContents, local: committer.indexThree, device: local,
                                      converts: committer.convertsToIndexThree)
            if moved != nil { committer.wipe() }
            committer = next
        }
        buildTree(merged, remote: remoteContents.items, local: oldItems, nextItemID: joining ? tree.nextItemID : max(nextItemID, tree.nextItemID))
        for item in oldItems.values { if let member = item.packedMember { packs.reserve(member) } }
        remote.pulled = pulledChanges(from: oldItems, digests: Dictionary(uniqueKeysWithValues: oldDigests))
        if !joining {
            let mergedFiles = Set(referencedFiles().map(\.file))
            for use in oldUses where writer.allocator.isOwnDevice(use.file) && !mergedFiles.contains(use.file) { writer.release(use.file) }
            // After those releases: a kept file sealed again releases its own files itself.
            var renumbered: [UInt64: UInt64] = [:]
            for entry in merged where entry.source == .local && entry.sourceID != entry.id { renumbered[entry.id] = entry.sourceID }
            try takeInKeptFiles(published: remote.uses, renumbered: renumbered)
        }
        let newUses = referencedFiles()
        remote.oldDevices = oldDevices
        var wanted = Set<String>()
        for use in newUses where !isOwn(use.file, joining: false) {
            let name = try self.name(use.file)
            if try !oldUses.contains(use) || oldNames[use.file] != name || !holds(name) { wanted.insert(name) }
        }
        // The remote's grants name the keys a withdrawal here retires: none comes down then.
        if !remote.movesRemote {
            wanted.formUnion(try grantsToFetch(root.specialFiles, previous: old.specialFiles, every: remote.rotated || joining,
                                               includingOwn: ownerFollows(remote)))
        }
        return wanted.sorted()
    }

    /// The merged items as the tree, its folders, packs and dirty records: a record is written
    /// again when it is not the remote's record under the same ID.
    private mutating func buildTree(_ merged: [MergedItem], remote: [UInt64: Item], local: [UInt64: Item], nextItemID: UInt64) {
        var items: [UInt64: Item] = [:], children: [UInt64: [[UInt8]: UInt64]] = [:]
        var dirty = Set<UInt64>(), dirtySegments: [UInt64: Set<Int>] = [:]
        for entry in merged {
            guard var item = entry.source == .remote ? remote[entry.sourceID] : local[entry.sourceID] else { continue }
            // An open file or a name the kernel knows keeps holding the item under its ID.
            item.holds = local[entry.id]?.holds ?? 0
            if entry.id != Format.rootItemID { item.record.links = [ItemRecord.Link(parentID: entry.parent, name: entry.name)] }
            item.record.version = entry.version
            item.record.changedBy = entry.changedBy
            if item.isFolder && children[entry.id] == nil { children[entry.id] = [:] }
            if entry.id != Format.rootItemID { children[entry.parent, default: [:]][entry.name] = entry.id }
            let theirs = remote[entry.id]
            if entry.source != .remote || entry.sourceID != entry.id || theirs?.record.links != item.record.links
                || theirs?.record.version != item.record.version {
                dirty.insert(entry.id)
                dirtySegments[entry.id] = item.segmentIndexes.union(theirs?.segmentIndexes ?? [])
            }
            items[entry.id] = item
        }
        var next = ItemTree(items: items, children: children, nextItemID: nextItemID)
        next.dirtyItems = dirty
        next.dirtySegments = dirtySegments
        for (id, item) in remote where items[id] == nil {
            next.removedKeys.append(.item(id))
            next.removedKeys += item.segmentIndexes.sorted().map { .segment(id, $0) }
        }
        tree = next
        var store = PackStore()
        for (id, item) in items { if let member = item.packedMember { store.addMember(id, member) } }
        store.keepPins(of: packs)
        packs = store
    }

    /// What the merge changed against the tree before it: the chunks of every item whose payload
    /// changed or that went are dropped from the cache and its content version moves on; the
    /// names that appeared, went or moved, and their folders, are what the kernel must forget.
    private mutating func pulledChanges(from old: [UInt64: Item], digests: [UInt64: [UInt8]]) -> PulledChanges {
        var pulled = PulledChanges()
        for id in Set(old.keys).union(tree.allItems.keys) {
            let new = tree.items[id]
            if new.map({ Self.syncDigest(id, $0, session.arena) }) != digests[id] {
                chunks.contentReplaced(id)
                pulled.items.insert(id)
            }
            let before = old[id]?.record.links ?? [], after = new?.record.links ?? []
            guard before != after else { continue }
            pulled.items.insert(id)
            for link in before + after where !(before.contains(link) && after.contains(link)) {
                pulled.names.insert(PulledChanges.Name(parent: link.parentID, name: link.name))
                pulled.items.insert(link.parentID)
            }
        }
        return pulled
    }

    /// A device that has never committed takes the remote's keys and device table, and adds
    /// its own entry (§13.11); its storage gets an unlock record of its own at the first commit.
    private mutating func join(_ remote: RemoteVault, _ root: IndexRootV2, deviceName: [UInt8]) throws {
        guard let record = remote.record else { throw SyncRefusal.noVault }
        // A pattern change's sync puts the new record up before the root that lists it (§13.12):
        // a record the root does not list as the owner's would leave this storage unopenable.
        // A grantee's record is its grant, which the root lists as one (§14.9).
        let role: IndexRootV2.SpecialFile.Role = record.role == .grant ? .grant : .ownerUnlock
        guard root.specialFiles.contains(where: { $0.role == role && $0.file == record.ownFile }) else {
            throw SyncRefusal.patternChanging
        }
        let index = UInt16(root.devices.count)
        let namesKey = try SecretBytes.random(count: Format.keySize, using: session.random)
        let used = Set(root.devices.map(\.itemPrefix))
        var prefix: UInt32 = 0
        while prefix == 0 || used.contains(prefix) { prefix = UInt32(truncatingIfNeeded: try session.random.uniform(Int(UInt32.max)) + 1) }
        let covers = UInt8(Format.coverRange.lowerBound + (try session.random.uniform(Format.coverRange.count)))
        let joined = VaultSecrets(rootLocator: try SecretBytes(copying: remote.rootLocator.copyBytes()),
                                  rootKey: try SecretBytes(copying: remote.rootKey.copyBytes()), namesKey: namesKey, localDevice: index)
        for (other, device) in root.devices.enumerated() { joined.addDevice(UInt16(other), namesKey: try SecretBytes(copying: device.namesKey)) }
        // A grantee keeps the grant as it found it (§14.9); an owner's device seals its own record.
        let unlock: (name: String, file: [UInt8])
        if let grant = remote.grantFile {
            unlock = (try remoteUnlockName(), grant)
        } else {
            // The identity and recipients travel with the owner's record (§13.11), nothing else.
            try joinIdentity(record)
            let own = UnlockRecord(vaultKey: record.vaultKey, rootLocator: record.rootLocator, ownFile: record.ownFile,
                                   identityKey: record.identityKey, optional: sharing.ownerOptional)
            var body = own.encode()
            defer { Sealer.wipe(&body) }
            unlock = (try FormatTwoKeys.unlockName(locator: session.patternSecrets.locator),
                      try Sealer.sealEnvelope(kind: .unlockRecord, version: StorageFormat.two.envelopeVersion, body: body[...],
                                              key: .secret(session.patternSecrets.indexKey), seal: .unlock(location: Label.localLocation),
                                              random: session.random).file)
        }
        let deviceID = try sharing.received.map { try granteeDeviceID($0, salt: try session.random.bytes(DeviceEntry.idSize / 2)) }
            ?? session.random.bytes(DeviceEntry.idSize)
        let entry = DeviceEntry(deviceID: deviceID, namesKey: [], itemPrefix: prefix, nextItemCounter: UInt32(Format.rootItemID + 1),
                                nextFileNumber: 0, coverCount: covers, ownedGroups: [], releasing: [], name: deviceName)
        var formatTwo = FormatTwoRoot(rootKey: try SecretBytes(copying: remote.rootKey.copyBytes()), deviceID: deviceID, itemPrefix: prefix,
                                      deviceName: deviceName, specialFiles: root.specialFiles,
                                      extensions: root.extensions.filter { $0.tag != SyncBase.extensionTag && $0.tag != IndexRootV3.entryHashKeyTag },
                                      localDevice: index)
        formatTwo.devices = root.devices.map { var entry = $0; entry.namesKey = []; return entry } + [entry]
        formatTwo.rootDue = true
        var next = try Committer(vaultKey: try SecretBytes(copying: remote.vaultKey.copyBytes()), generation: 0, formatTwo: formatTwo)
        next.useLoaded(PageTable(loaded: remote.contents!))
        // The remote's index version: a device that joins converts nothing (§15.1).
        try next.takeIndexVersion(of: root, contents: remote.contents!, local: nil, device: index, converts: false)
        committer.wipe()
        secrets.wipe()
        committer = next
        secrets = joined
        writer = FileWriter(storage: storage, secrets: joined, random: session.random,
                            allocator: FileAllocator(newVaultWithCovers: covers, device: index))
        writer.pendingUnlock = unlock
        writer.joinStandIns = remote.joinStandIns
        writer.lendsFreeFiles = true
        tree = ItemTree(items: tree.allItems, children: tree.children, nextItemID: UInt64(prefix) << 32 | (Format.rootItemID + 1))
    }

    /// After the downloads: each downloaded file opens under the key the merged state records
    /// for it (a file a provider changed stops the sync before anything is committed); every
    /// other device's groups are made whole with random files, and groups it no longer owns go.
    mutating func finishMerge(_ remote: RemoteVault, downloaded: [String]) throws {
        try checkOpens(Set(downloaded), items: tree.allItems, naming: secrets)
        try completeOtherGroups(remote)
        // The merged state references what was staged: its commit puts it in place.
        adoptStagedDownloads(wanted: Set(downloaded))
    }

    /// Each of `names` that `items` reference opens under the key recorded for it.
    func checkOpens(_ names: Set<String>, items: [UInt64: Item], naming: VaultSecrets) throws {
        // A file staged for a name the committed root still reads is checked where it lies.
        let redirects = try stagedRedirects()
        func name(_ number: UInt64) throws -> String { try naming.fileName(number) }
        func read(_ name: String) -> String { redirects[name] ?? name }
        for (id, item) in items {
            for (index, ref) in item.chunks {
                guard names.contains(try name(ref.fileNumber)) else { continue }
                guard let file = try storage.read(read(try name(ref.fileNumber))), let body = openChunk(file, ref, index, of: id, item) else {
                    throw SyncRefusal.damagedRemote("file \(FileRef(raw: ref.fileNumber)) does not open under its key")
                }
                body.wipeStorage()
            }
            if let member = item.packedMember, names.contains(try name(member.fileNumber)) {
                let sealed = try storage.read(read(try name(member.fileNumber)), offset: Int(member.offset), count: Int(member.sealedLength))
                guard let plain = try? openMember(id, item, member, sealed) else {
                    throw SyncRefusal.damagedRemote("file \(FileRef(raw: member.fileNumber)) does not open under its key")
                }
                plain.wipeStorage()
            }
        }
    }

    /// The plaintext of chunk `index` of `item` in `file`: under its own key, or (scheme 1, an
    /// upgraded item's) under the item key with the recorded nonce, bound to the item's ID.
    private func openChunk(_ file: [UInt8], _ ref: StoredRef, _ index: Int, of id: UInt64, _ item: Item) -> [UInt8]? {
        if let key = ref.key {
            return try? Sealer.openEnvelope(file, expectedNonce: nil, kind: .chunk, version: StorageFormat.two.envelopeVersion,
                                            key: .arena(key, session.arena), seal: .chunkV2(index: index))
        }
        guard let itemKey = item.key else { return nil }
        return try? Sealer.openEnvelope(file, expectedNonce: ref.nonce, kind: .chunk, key: .arena(itemKey, session.arena),
                                        seal: .chunk(item: id, index: index))
    }

    /// Every other device's groups made whole with random files; the files of groups it no
    /// longer owns go after the commit.
    mutating func completeOtherGroups(_ remote: RemoteVault) throws {
        guard let formatTwo = committer.formatTwo else { return }
        let special = Set(formatTwo.specialFiles.map(\.file.raw))
        // On a grantee's device the owner's record is random bytes at its number's name, made
        // with the rest of its group (`settleSpecialFiles` makes it alone only in a whole group).
        let randomHere = Set(formatTwo.specialFiles.filter { $0.role == .ownerUnlock && sharing.received != nil }.map(\.file.raw))
        func numbers(_ device: DeviceEntry, _ index: Int) -> Set<UInt64> {
            var all = Set<UInt64>()
            for number in device.ownedGroups.fileNumbers(ofDevice: index) {
                let raw = FileRef(device: UInt16(index), number: number).raw
                if !special.contains(raw) || randomHere.contains(raw) { all.insert(raw) }
            }
            return all
        }
        // The storage's count for a join's covers: listed once for all the groups below.
        var changed = false, files: Int?
        for (index, device) in formatTwo.devices.enumerated() where index != Int(formatTwo.localDevice) {
            // A group's missing files appear together, as this device's new groups do: one by
            // one, a sync cut between two of them left a count off a multiple of 16, which no
            // later open puts right (the group is not in the committed device table yet).
            var missing: [UInt64: [(name: String, contents: [UInt8])]] = [:]
            for raw in numbers(device, index).sorted() where try !storage.entryExists(try name(raw)) {
                missing[FileRef(raw: raw).number / UInt64(Format.groupSize), default: []]
                    .append((try name(raw), try session.random.bytes(Format.fileSize)))
            }
            // A join's stand-ins (`JoinStandIns`) come with their groups, as random files.
            for standIn in remote.joinStandIns?.all ?? [] where Int(standIn.file.device) == index {
                let group = standIn.file.number / UInt64(Format.groupSize)
                guard device.ownedGroups.contains(where: { $0.first <= group && group < $0.end }),
                      try !storage.entryExists(standIn.name) else { continue }
                missing[group, default: []].append((standIn.name, try session.random.bytes(Format.fileSize)))
            }
            for group in missing.keys.sorted() {
                try storage.createGroup(missing[group]! + joinCovers(adding: missing[group]!.count, remote, files: &files))
                changed = true
            }
            // Groups it released go right after the merge's commit (`removeReleasedElsewhere`):
            // this device's last commit may still reference their files.
            releasedElsewhere.formUnion(try releasedFiles(of: device, index, special: special))
        }
        if try settleSpecialFiles(formatTwo.specialFiles) { changed = true }
        if changed { try storage.syncFolder() }
    }
}
