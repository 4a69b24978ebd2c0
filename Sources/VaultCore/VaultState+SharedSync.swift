import VaultCrypto
import VaultFormat
import VaultStore

/// A vault shared with this one, synced (docs/FORMAT.md §14.9). The grant is the record a
/// grantee finds on the remote and keeps in its own storage, at the name it has everywhere
/// (the sharer's storage, the remote, each grantee's); the grantee's device joins the shared
/// vault as any device does, and never holds the sharer's pattern-derived keys.
extension VaultState {
    /// The grant of `received.sender` to this vault's identity: its name in every storage.
    func grantName(_ received: VaultSharing.Received) throws -> String {
        try GrantSeal.name(receiving: received.recipient, from: received.sender, location: Label.localLocation)
    }

    /// The remote's keys, from the grant found there. A vault already in this storage must be
    /// the one the grant names (its VK).
    func openRemoteGrant(_ received: VaultSharing.Received, file: [UInt8]?) throws -> RemoteVault {
        guard let file else { throw SharingError.noGrantOnRemote }
        let record = try GrantSeal.open(file, recipient: received.recipient, sender: received.sender)
        // The owner withdrew this grant (§14.8): nothing here is touched.
        guard record.role == .grant else { throw SharingError.accessEnded }
        var rotated = false
        if !isNew {
            // Only the storage this person's sync filled syncs as their device (§14.9).
            guard let own = committer.formatTwo, try Self.isGranteeDevice(own.deviceID, received) else {
                record.vaultKey.wipeStorage()
                record.rootLocator.wipeStorage()
                throw SharingError.copiedStorage
            }
            var mine = committer.vaultKey.copyBytes(), locator = secrets.locator.copyBytes()
            defer {
                Sealer.wipe(&mine)
                Sealer.wipe(&locator)
            }
            // Another grant was withdrawn and this one sealed again to new keys, or the owner's
            // pattern change moved an upgraded vault's root locator (§13.12): the sync follows
            // if the remote root under them lists this device (`checkGrantListed`).
            rotated = !ConstantTime.equals(mine, record.vaultKey) || !ConstantTime.equals(locator, record.rootLocator)
        }
        let remote = try RemoteVault(record: record, vaultKey: try SecretBytes(copying: record.vaultKey),
                                     rootLocator: try SecretBytes(copying: record.rootLocator), joins: isNew)
        remote.grantFile = file
        remote.rotated = rotated
        remote.follows = rotated
        return remote
    }

    /// A grantee's device ID (§14.9): a random half G, then HKDF(Z, label ‖ pkS ‖ pkR ‖ G),
    /// so that only the pair S, R can make one and a storage copied from another device (the
    /// sharer's, another grantee's) is told apart from one that R's sync filled.
    func granteeDeviceID(_ received: VaultSharing.Received, salt: [UInt8]) throws -> [UInt8] {
        salt + (try Self.granteeDeviceTag(received, salt: salt))
    }

    static func isGranteeDevice(_ deviceID: [UInt8], _ received: VaultSharing.Received) throws -> Bool {
        try isGranteeDevice(deviceID, pairedBy: received.recipient, peer: received.sender, sender: received.sender,
                            recipient: received.recipient.publicKey)
    }

    /// Whether `deviceID` is one the pair made, told by either side: the recipient (`identity`
    /// R's, `peer` pkS) or the sharer (`identity` S's, `peer` pkR), since Z is the same for both.
    static func isGranteeDevice(_ deviceID: [UInt8], pairedBy identity: X25519.PrivateKey, peer: [UInt8], sender: [UInt8],
                                recipient: [UInt8]) throws -> Bool {
        let half = DeviceEntry.idSize / 2
        guard deviceID.count == DeviceEntry.idSize else { return false }
        let tag = try granteeDeviceTag(identity: identity, peer: peer, sender: sender, recipient: recipient, salt: Array(deviceID[..<half]))
        return ConstantTime.equals(Array(deviceID[half...]), tag)
    }

    private static func granteeDeviceTag(_ received: VaultSharing.Received, salt: [UInt8]) throws -> [UInt8] {
        try granteeDeviceTag(identity: received.recipient, peer: received.sender, sender: received.sender,
                             recipient: received.recipient.publicKey, salt: salt)
    }

    private static func granteeDeviceTag(identity: X25519.PrivateKey, peer: [UInt8], sender: [UInt8], recipient: [UInt8],
                                         salt: [UInt8]) throws -> [UInt8] {
        let pair = try GrantSeal.pairSecret(identity: identity, peer: peer)
        defer { pair.wipe() }
        return try HKDF.deriveBytes(from: pair, salt: [], info: GrantFile.deviceInfo(sender: sender, recipient: recipient, salt: salt),
                                    count: DeviceEntry.idSize / 2)
    }

    /// A grant opens only a vault whose remote root lists it (role 2, at the grant's FileRef):
    /// otherwise it was withdrawn, or its share was cut short. Checked before anything is
    /// downloaded.
    func checkGrantListed(_ remote: RemoteVault) throws {
        if sharing.received == nil && (remote.follows || remote.withdrawnTwice) {
            // The owner's other device withdrew a grant: the vault's if its root lists this device.
            guard remoteListsThisDevice(remote) else { throw SyncRefusal.otherLineage }
            // Withdrawn here too: the two do not merge (FORMAT.md §14.8), and nothing is written.
            if remote.withdrawnTwice { throw SyncRefusal.withdrawnOnTwoDevices }
            return
        }
        if sharing.received == nil && remote.movesRemote, let root = remote.root, let own = committer.formatTwo {
            // A grant another device made since this one's last sync names the old keys, and
            // this sync, which moves the remote to new ones, cannot seal it again (§14.8).
            let known = Set(own.specialFiles.filter(\.isGrantFile).map(\.name))
            if root.specialFiles.contains(where: { $0.isGrantFile && !known.contains($0.name) }) {
                throw SyncRefusal.withdrawnAfterShareElsewhere
            }
            return
        }
        guard sharing.received != nil, let record = remote.record else { return }
        if remote.rotated {
            // New keys are this vault's only if their root lists this device as it knows itself.
            guard remoteListsThisDevice(remote) else { throw SharingError.otherSharedVault }
        }
        guard let root = remote.root else { throw SharingError.sharedVaultNotOnRemote }
        guard root.specialFiles.contains(where: { $0.role == .grant && $0.file == record.ownFile }) else {
            throw SharingError.noGrantOnRemote
        }
    }

    /// The vault `sender` shared with the vault `patternSecrets` open, for a sync: as
    /// `openShared` when this storage holds its grant; otherwise a new vault that joins through
    /// the grant the sync finds on the remote. The pattern opens the opener's own record only;
    /// nothing is written here.
    static func openSharedForSync(storage: any StorageFolder, secrets patternSecrets: VaultSecrets, sender: [UInt8],
                                  random: any RandomSource, clock: any VaultClock, options: OpenOptions) throws -> VaultState {
        let recipient = try ownIdentity(storage: storage, patternSecrets: patternSecrets, missing: .noGrantOnRemote)
        let name: String
        do { name = try GrantSeal.name(receiving: recipient, from: sender, location: Label.localLocation) } catch {
            recipient.rawRepresentation.wipe()
            throw error
        }
        if try storage.entryExists(name) {
            recipient.rawRepresentation.wipe()
            return try openShared(storage: storage, secrets: patternSecrets, sender: sender, random: random, clock: clock, options: options)
        }
        // A device that joins (SyncMerge's `join`) replaces the keys, the root and the record
        // to write: this new vault's own are never written.
        var state = try VaultState(newVaultIn: storage, secrets: patternSecrets, random: random, clock: clock, readOnly: false,
                                   cacheBytes: options.cacheBytes, owner: options.owner)
        state.writer.pendingUnlock = nil
        state.sharing.identity?.rawRepresentation.wipe()
        state.sharing.identity = nil
        state.sharing.received = VaultSharing.Received(recipient: recipient, sender: sender)
        return state
    }

    /// The grants of other devices' vault that this storage lacks (every storage of the vault
    /// holds every grant, as it holds every owned group whole), but the one that is this
    /// device's own record.
    /// A grant sealed again since this storage got it comes again: all of them after a
    /// withdrawal, and in a join, which compares any here with the remote's (`every`), else
    /// one whose role `previous` lists otherwise.
    /// `includingOwn`: this device's grants too (a withdrawal on another device of the owner
    /// sealed them again there).
    func grantsToFetch(_ specialFiles: [IndexRootV2.SpecialFile], previous: [IndexRootV2.SpecialFile] = [],
                       every: Bool = false, includingOwn: Bool = false) throws -> [String] {
        var own = writer.pendingUnlock?.name
        if own == nil, let received = sharing.received { own = try grantName(received) }
        var names: [String] = []
        for special in specialFiles where special.isGrantFile && (includingOwn || !writer.allocator.isOwnDevice(special.file.raw)) {
            let name = FileName.encode(special.name)
            guard name != own else { continue }
            let resealed = every || previous.contains { $0.name == special.name && $0.role != special.role }
            if try resealed || !storage.entryExists(name) { names.append(name) }
        }
        return names
    }

    /// Another device's special files in this storage (FORMAT.md §14.9): a grant takes its
    /// number's place, so a file at the number's own name goes once the grant is here (the
    /// download put the grant there, `grantPlaces`), but never one the committed root still
    /// reads, which the grant replaces after the merge's commit (`placeHeldGrants`); until the
    /// grant comes, that file keeps its group whole. On a grantee's device the owner's record,
    /// which only the owner's devices hold, is a file of `random(F)` at its number's name, so
    /// that the groups stay whole. Returns whether the folder changed.
    mutating func settleSpecialFiles(_ specialFiles: [IndexRootV2.SpecialFile]) throws -> Bool {
        var changed = false
        for special in specialFiles where !writer.allocator.isOwnDevice(special.file.raw) {
            let name = try self.name(special.file.raw)
            let exists = try storage.entryExists(name)
            if special.role == .ownerUnlock && sharing.received != nil {
                guard !exists else { continue }
                try storage.create(name, contents: try session.random.bytes(Format.fileSize), durable: false)
                changed = true
            } else if special.isGrantFile && exists && staging.protected?[name] == nil, try storage.entryExists(FileName.encode(special.name)) {
                try storage.remove(name)
                changed = true
            }
        }
        return changed
    }
}
