import VaultCrypto
import VaultFormat
import VaultStore

/// Another device follows a pattern change made on device 0 (docs/FORMAT.md §13.12, "Another
/// device follows the change"): the new pattern finds no record in this storage, but the remote's
/// record of it names the keys whose local slots are here, written by this device. The old
/// state is opened with those keys, takes the new record at the number device 0 chose, and a
/// change in progress is committed and finished as a local change is: at every instant one of
/// the two patterns opens the whole state.
extension VaultState {
    /// Where this storage stands against the remote's record of a pattern.
    enum FollowPoint {
        /// The root lists the old record (role 1): the follow begins.
        case begins(oldOwner: IndexRootV2.SpecialFile)
        /// The root lists the remote's record and the old one with role 3: the open finishes it.
        case committed
    }

    /// The state this storage holds under the remote record's keys, with the change followed;
    /// nil when this storage is not one to follow in (anything else, which the join refuses as
    /// before). `remoteSlots` reads the remote's slot files at the names given. Self is the
    /// empty state the new pattern opened.
    /// `step` is told each step done ("record", "commit", "finished"): a test throws from it to
    /// stop there.
    func followedPatternChange(unlockFile: [UInt8], remoteSlots: ([String]) throws -> [[UInt8]?],
                               step: (String) throws -> Void) throws -> VaultState? {
        guard isNew, sharing.received == nil, !session.readOnly, committer.format == .two,
              let body = try? Sealer.openEnvelope(unlockFile, expectedNonce: nil, kind: .unlockRecord,
                                                  version: StorageFormat.two.envelopeVersion, key: .secret(session.patternSecrets.indexKey),
                                                  seal: .unlock(location: Label.remoteLocation)) else { return nil }
        defer { body.wipeStorage() }
        guard let record = try? UnlockRecord.decode(body[...]) else { return nil }
        let vaultKey = try SecretBytes(copying: record.vaultKey), locator = try SecretBytes(copying: record.rootLocator)
        let rootKey = try FormatTwoKeys.rootKey(vaultKey: vaultKey)
        defer {
            record.vaultKey.wipeStorage()
            record.rootLocator.wipeStorage()
            record.identityKey.wipeStorage()
            vaultKey.wipe()
            locator.wipe()
            rootKey.wipe()
        }
        // The remote has finished the change: its root lists the record as the owner's.
        let remoteNames = try (0..<UInt8(Format.indexSlotCount)).map {
            try FormatTwoKeys.slotName(rootLocator: locator, slot: $0, location: Label.remoteLocation)
        }
        let remoteFiles = try remoteSlots(remoteNames)
        guard let remoteRoot = try? Self.newestRemoteRoot(rootKey: rootKey, files: remoteFiles, readsIndexThree: readsIndexThree)
        else { return nil }
        defer { remoteRoot.wipeKeys() }
        guard remoteRoot.specialFiles.contains(where: { $0.role == .ownerUnlock && $0.file == record.ownFile }) else { return nil }
        // This storage's own state of this vault: its slots open with the record's keys (the seal
        // authenticates them), written by a device other than the changer.
        let localFiles = try (0..<UInt8(Format.indexSlotCount)).map { slot -> [UInt8]? in
            let name = try FormatTwoKeys.slotName(rootLocator: locator, slot: slot)
            return try storage.entryExists(name) ? try storage.read(name) : nil
        }
        guard let local = try? Self.newestRemoteRoot(rootKey: rootKey, files: localFiles, readsIndexThree: readsIndexThree) else { return nil }
        defer { local.wipeKeys() }
        guard let point = try followPoint(local, remote: remoteRoot, record: record) else { return nil }
        let owner = local.specialFiles.first { $0.role == .ownerUnlock }!
        // Opened as its own record opens it (role 1), with the remote record's tags. Fresh
        // buffers each time: an open zeroes its record's in place.
        func open(readOnly: Bool) throws -> VaultState {
            let opening = UnlockRecord(vaultKey: Self.fresh(record.vaultKey), rootLocator: Self.fresh(record.rootLocator), ownFile: owner.file,
                                       identityKey: Self.fresh(record.identityKey), optional: record.optional)
            var state = try Self.openFormatTwo((FileName.encode(owner.name), opening), storage: storage, secrets: session.patternSecrets,
                                               random: session.random, clock: session.clock,
                                               options: OpenOptions(readOnly: readOnly, cacheBytes: chunks.cache.limit, indexThree: readsIndexThree))
            state.indexFanOut = indexFanOut
            state.readsIndexThree = readsIndexThree
            return state
        }
        guard case .begins(let oldOwner) = point else { return try open(readOnly: false) }
        // Read first, so that a state not to follow is left as it is, byte for byte.
        var probe = try open(readOnly: true)
        let follows = try probe.holdsFreeFile(record.ownFile)
        probe.wipeReplaced()
        guard follows else { return nil }
        var state = try open(readOnly: false)
        do {
            try state.followChange(record, oldOwner: oldOwner, step: step)
        } catch {
            state.wipeReplaced()
            throw error
        }
        return state
    }

    /// Whether device 0's `file` is here (every storage holds every owned group whole) and free
    /// in this state: device 0 may have freed it and taken it for the record after this
    /// device's last sync, whose state still references it.
    private func holdsFreeFile(_ file: FileRef) throws -> Bool {
        try storage.entryExists(name(file.raw)) && !referencedFiles().contains { $0.file == file.raw }
    }

    /// Whether `local` is a state to follow the remote's change in, and where it stands.
    private func followPoint(_ local: IndexRootV2, remote: IndexRootV2, record: UnlockRecord) throws -> FollowPoint? {
        // Device 0 changed the pattern: a copy of its own storage is not followed here.
        guard local.writerDevice != 0, record.ownFile.device == 0, local.devices.count > 0,
              let owner = local.specialFiles.first(where: { $0.role == .ownerUnlock }) else { return nil }
        let retired = local.specialFiles.contains { $0.role == .retiredOwner }
        if owner.file == record.ownFile { return retired ? .committed : nil }
        guard !retired, owner.file.device == 0 else { return nil }
        // The new record's number must be in device 0's groups here (`holdsFreeFile` the rest).
        guard local.devices[0].ownedGroups.holds(record.ownFile.number) else { return nil }
        // A grant made here since the last sync names a recipient that the remote's record
        // (whose tags the new record takes) does not list.
        let remoteGrants = Set(remote.specialFiles.filter(\.isGrantFile).map(\.file))
        guard local.specialFiles.filter(\.isGrantFile).allSatisfy({ remoteGrants.contains($0.file) }) else { return nil }
        return .begins(oldOwner: owner)
    }

    /// Steps 1 and 2 of §13.12 with the number device 0 chose, then steps 3–5 (the open's
    /// finish): the new record (location "local", the remote record's keys and tags) at device
    /// 0's name of its number, then a root listing it with role 1 and the old record with role 3.
    private mutating func followChange(_ record: UnlockRecord, oldOwner: IndexRootV2.SpecialFile, step: (String) throws -> Void) throws {
        // The commit below needs the whole index and the base's pins, as an open's finish does.
        try loadWholeIndex()
        try readPinsIfUnread()
        guard var root = committer.formatTwo else { return }
        let own = UnlockRecord(vaultKey: committer.vaultKey.copyBytes(), rootLocator: secrets.locator.copyBytes(), ownFile: record.ownFile,
                               identityKey: Self.fresh(record.identityKey), optional: record.optional)
        let name = try self.name(record.ownFile.raw)
        try storage.write(name, offset: 0, bytes: try FormatTwoVault.sealOwnerRecord(own, patternSecrets: session.patternSecrets,
                                                                                      random: session.random))
        try storage.sync([name])
        try step("record")
        let newName = try FormatTwoKeys.unlockNameBytes(locator: session.patternSecrets.locator)
        root.specialFiles = [IndexRootV2.SpecialFile(file: record.ownFile, role: .ownerUnlock, name: newName),
                             IndexRootV2.SpecialFile(file: oldOwner.file, role: .retiredOwner, name: oldOwner.name)]
            + root.specialFiles.filter(\.isGrantFile)
        committer.formatTwo = root
        committer.formatTwo?.rootDue = true
        try commit()
        try step("commit")
        try finishPatternChange()
        try step("finished")
    }

    private static func fresh(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBufferPointer { Array($0) } }

    /// A state dropped for another that shares its pattern's secrets (the empty one a follow
    /// replaces, the follow's read-only look first): erased but for those secrets.
    mutating func wipeReplaced() {
        chunks.removeAll()
        packs.wipe()
        session.arena.wipeAll()
        committer.wipe()
        sharing.wipe()
        secrets.wipe()
        tree.removeAll()
    }
}
