import VaultCrypto
import VaultFormat
import VaultStore

/// The names a join may write in this storage (FORMAT.md §13.11, §13.12): the local root slots
/// of the remote's RL, the grants' names, and each device of the remote root's table at its
/// numbers below nextFileNumber (device 0 from 2), named from its NKd. Those cover the files the
/// join downloads, the group files it adds to make groups whole and the released files it
/// removes. A storage that holds this vault under another pattern holds some of them; so does
/// one where a join of this pattern was killed before its commit, which the next sync resumes.
extension VaultState {
    /// Calls `body` with each name a join from `remote`'s root may write, and whether the join
    /// would write it whatever is there: the slots and the released numbers (the numbers of a
    /// device outside its owned groups, whose files a merge removes).
    /// The slots' stand-ins (`JoinStandIns`) are a join's own names too, as device 0's numbers.
    /// A grant at its name is what a join killed after placing it left, or a state under
    /// another pattern: the join downloads every grant again and goes on only where the bytes
    /// are the same (`refuseDifferingDownloads`; a state of the same RL has its slots here,
    /// one of an RL a withdrawal replaced has grants sealed before it, §14.8).
    private func forEachJoinName(_ remote: RemoteVault, _ root: IndexRootV2, _ body: (String, _ written: Bool) throws -> Void) throws {
        let names = try Self.remoteNames(remote, root)
        defer { names.wipe() }
        for slot in 0..<UInt8(Format.indexSlotCount) { try body(try names.indexName(slot: slot), true) }
        for standIn in remote.joinStandIns?.slots ?? [] { try body(standIn, false) }
        for special in root.specialFiles where special.isGrantFile { try body(FileName.encode(special.name), false) }
        // Made one by one (`fileName` would cache each name): a range may be long.
        for (index, device) in root.devices.enumerated() {
            guard let key = names.namesKey(ofDevice: UInt16(index)) else { continue }
            for number in stride(from: index == 0 ? Format.indexSlotCount : 0, to: device.nextFileNumber, by: 1) {
                let owned = device.ownedGroups.holds(number)
                try body(try VaultSecrets.deviceFileName(number, namesKey: key), !owned)
            }
        }
    }

    /// Before anything comes down. A file at a name the join writes whatever is there (a slot,
    /// a released number) means the storage holds this vault already, under another
    /// pattern (changed on another device since, §13.12), whose root and files the join would
    /// write over or remove: refused. A file at a number of an owned group is left as it is
    /// unless the remote root references that name; then the join's download must bring the
    /// same bytes (`refuseDifferingDownloads`), as it does over what a killed join of this
    /// vault placed: that join resumes. A withdrawal since (§14.8) gives the slots another RL
    /// but keeps the names keys, so the slots alone do not tell.
    /// A join of this pattern killed in its commit left its slots at their names and its
    /// record in its stand-in: they go back to their stand-ins first, and the join starts again.
    func refuseJoinOverHeldFiles(_ remote: RemoteVault) throws {
        guard remote.joins, let root = remote.root else { return }
        remote.joinStandIns = try joinStandIns(remote, root)
        var present = Set(try storage.listAllNames().filter(FileName.isWellFormed))
        if try undoKilledJoinCommit(remote, present: present) { present = Set(try storage.listAllNames().filter(FileName.isWellFormed)) }
        var held = Set<String>()
        if !present.isEmpty {
            try forEachJoinName(remote, root) { name, written in
                guard present.contains(name) else { return }
                if written { throw SyncRefusal.heldUnderOtherPattern }
                held.insert(name)
            }
        }
        remote.joinHeld = held
    }

    /// The stand-ins of a join: device 0's numbers 0 and 1 and the remote record's number (a
    /// grantee's: the grant's, §14.9), at their device names. Where device 0 names its files
    /// from this pattern's NK (a vault upgraded from format 1, §13.9), the record is named
    /// before the slots (`JoinStandIns.recordNamedFirst`, §13.12).
    /// None when the root does not list the record as the owner's (or the grant): the join stops
    /// at its merge (a pattern change's sync cut short, §13.12), and that number is a free file
    /// until then.
    private func joinStandIns(_ remote: RemoteVault, _ root: IndexRootV2) throws -> JoinStandIns? {
        let role: IndexRootV2.SpecialFile.Role = remote.grantFile == nil ? .ownerUnlock : .grant
        guard let record = remote.record, !root.devices.isEmpty,
              root.specialFiles.contains(where: { $0.role == role && $0.file == record.ownFile }) else { return nil }
        let names = try Self.remoteNames(remote, root)
        defer { names.wipe() }
        guard let key = names.namesKey(ofDevice: 0), let recordName = try? names.fileName(record.ownFile.raw) else { return nil }
        let deviceKey = key.copyBytes(), patternKey = session.patternSecrets.namesKey.copyBytes()
        defer {
            deviceKey.wipeStorage()
            patternKey.wipeStorage()
        }
        let recordFirst = ConstantTime.equals(deviceKey, patternKey)
        let grants = try recordFirst ? root.specialFiles.filter(\.isGrantFile).map { (try names.fileName($0.file.raw), $0.file) } : []
        return try JoinStandIns(namesKeyOfDeviceZero: key, recordFile: record.ownFile, recordName: recordName,
                                recordNamedFirst: recordFirst, grants: grants)
    }

    /// A join's commit writes its record into the record's stand-in, then its root and copy into
    /// the slots' stand-ins and renames those to the slots, then the record to its name (FORMAT.md
    /// §13.12). Killed between, it leaves slots whose root no record of this pattern finds:
    /// a file at a slot's name beside a stand-in that this pattern opens as a record of this vault
    /// is that, and each slot is renamed back to its stand-in (the count does not move). A slot
    /// beside anything else (another pattern's state) stays, and refuses the join.
    /// A commit that names its record first never leaves a slot without it: nothing to undo.
    /// Told that no other state is here (`replacesPartialJoin`), a record there that this
    /// pattern opens as a former one of this vault (the remote's keys changed since, §14.8) names
    /// the slots to take back by its own RL.
    private func undoKilledJoinCommit(_ remote: RemoteVault, present: Set<String>) throws -> Bool {
        guard let standIns = remote.joinStandIns, !standIns.recordNamedFirst else { return false }
        func slotNames(_ locator: SecretBytes) throws -> [String] {
            try (0..<UInt8(Format.indexSlotCount)).map { try FormatTwoKeys.slotName(rootLocator: locator, slot: $0) }
        }
        var slots = try slotNames(remote.rootLocator)
        if try !slots.contains(where: present.contains) || !killedJoinRecord(at: standIns.record, remote: remote) {
            guard remote.replacesPartialJoin, let former = formerJoinLocator(at: standIns.record, remote: remote) else { return false }
            defer { former.wipe() }
            slots = try slotNames(former)
            guard slots.contains(where: present.contains) else { return false }
        }
        for (slot, standIn) in zip(slots, standIns.slots) where present.contains(slot) {
            guard !present.contains(standIn) else { throw SyncRefusal.heldUnderOtherPattern }
            try storage.rename(slot, to: standIn)
        }
        try storage.syncFolder()
        return true
    }

    /// Whether the file at `name` is an owner record of this vault that this pattern opens, or
    /// for a grantee the grant as the remote holds it.
    private func killedJoinRecord(at name: String, remote: RemoteVault) throws -> Bool {
        if let grant = remote.grantFile { return (try? storage.read(name)) == grant }
        guard let file = try? storage.read(name),
              let record = try? FormatTwoVault.openUnlock(file, patternSecrets: session.patternSecrets) else { return false }
        defer {
            record.vaultKey.wipeStorage()
            record.rootLocator.wipeStorage()
            record.identityKey.wipeStorage()
        }
        let vaultKey = remote.vaultKey.copyBytes()
        defer { vaultKey.wipeStorage() }
        return ConstantTime.equals(record.vaultKey, vaultKey) && record.ownFile == remote.record?.ownFile
    }

    /// The RL of the record at `name` when this pattern opens it as one of this vault's, keys
    /// aside: an owner record of the remote record's number, or a grant from the grant's sender.
    private func formerJoinLocator(at name: String, remote: RemoteVault) -> SecretBytes? {
        guard let file = try? storage.read(name) else { return nil }
        let record: UnlockRecord
        if remote.grantFile != nil {
            guard let received = sharing.received,
                  let grant = try? GrantSeal.open(file, recipient: received.recipient, sender: received.sender) else { return nil }
            record = grant
        } else {
            guard let owner = try? FormatTwoVault.openUnlock(file, patternSecrets: session.patternSecrets) else { return nil }
            record = owner
        }
        defer {
            record.vaultKey.wipeStorage()
            record.rootLocator.wipeStorage()
            record.identityKey.wipeStorage()
        }
        guard remote.grantFile != nil || record.ownFile == remote.record?.ownFile else { return nil }
        return try? SecretBytes(copying: record.rootLocator)
    }

    /// A join places a download over a file here only when the bytes are the same: a file a
    /// killed join of this vault placed. Different bytes are a state of this vault under another
    /// pattern (or one the remote changed since that join): refused before this placement, and
    /// what this join placed goes (`removeJoinLeftovers`). The join's own fills are not compared.
    /// Told that no other state is here (`replacesPartialJoin`), the download replaces the file:
    /// returned are those of them that were here when the join began, for `joinReplaced`.
    func refuseDifferingDownloads(_ replacing: [String], from downloads: DownloadFolder, remote: RemoteVault) throws -> [String] {
        guard remote.joins else { return [] }
        var differing: [String] = []
        for name in replacing where !staging.filled.contains(name) {
            guard remote.replacesPartialJoin else {
                guard let here = try storage.read(name) else { continue }
                guard try here == downloads.read(name) else { throw SyncRefusal.heldUnderOtherPattern }
                continue
            }
            // A file there that does not read as a storage file is replaced too.
            if remote.joinHeld?.contains(name) == true, try (try? storage.read(name)) != downloads.read(name) { differing.append(name) }
        }
        return differing
    }

    /// A join that failed before its commit (a remote gone, a file that does not open, a file
    /// here that differs): what is at one of its names now and was not when it began is its
    /// own, and goes, in whole groups as it came; what was there stays. The next sync joins
    /// again. Nothing when it committed or was refused before it began.
    mutating func removeJoinLeftovers(_ remote: RemoteVault) throws {
        guard remote.joins, let held = remote.joinHeld, isNew, let root = remote.root else { return }
        var removed = try returnJoinGrants(remote, root, held: held)
        let present = Set(try storage.listAllNames().filter(FileName.isWellFormed))
        removed = try removeJoinCovers(remote) || removed
        try forEachJoinName(remote, root) { name, _ in
            guard present.contains(name), !held.contains(name) else { return }
            try storage.remove(name)
            removed = true
        }
        if removed { try storage.syncFolder() }
    }
}
