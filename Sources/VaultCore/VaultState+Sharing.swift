import VaultCrypto
import VaultFormat
import VaultStore

/// Sharing a vault (docs/FORMAT.md §14.7): the identity a contact code comes from, writing a
/// grant, and opening a vault through one. A grant is a special file of the root (role 2): it
/// takes a free number of the vault, whose file it replaces, so the storage keeps its count.
extension VaultState {
    /// The contact code of the vault that was opened: its own, or for a vault opened through a
    /// grant the opener's own (`sharedWithYou`), the one its sharer granted to.
    mutating func contactCode() throws -> (code: ContactCode, sharedWithYou: Bool) {
        if let received = sharing.received { return (ContactCode(publicKey: received.recipient.publicKey), true) }
        return (ContactCode(publicKey: try ensureIdentity().publicKey), false)
    }

    /// The vault's identity, made durable before anyone is given its code: a new vault, or a
    /// format-1 vault being upgraded (§13.9), is committed first; a vault without an identity
    /// gets its owner record again with tag 16.
    mutating func ensureIdentity() throws -> X25519.PrivateKey {
        guard committer.format == .two else { throw SharingError.formatOne }
        guard sharing.received == nil else { throw SharingError.sharedWithYou }
        if isNew || committer.upgrade != nil {
            try checkWritable()
            // The record goes first (a new vault's with its identity), then the root.
            tree.dirtyItems.insert(Format.rootItemID)
            try commit()
        }
        if let identity = sharing.identity { return identity }
        try checkWritable()
        let identity = try X25519.PrivateKey(using: session.random)
        do { try writeOwnerRecord(identity: identity) } catch {
            identity.rawRepresentation.wipe()
            throw error
        }
        sharing.identity = identity
        return identity
    }

    /// §14.7: the owner's record, the same but for tag 16 and its optional tags, sealed anew and
    /// put in place of the old one by the storage's atomic replace: a crash leaves the old record
    /// or the new.
    mutating func writeOwnerRecord(identity: X25519.PrivateKey?, optional: [IndexRootV2.Extension]? = nil) throws {
        guard let own = committer.formatTwo?.specialFiles.first(where: { $0.role == .ownerUnlock }) else {
            throw VaultError.damagedIndex("the root lists no owner's unlock record")
        }
        let optional = optional ?? sharing.ownerOptional
        let record = UnlockRecord(vaultKey: committer.vaultKey.copyBytes(), rootLocator: secrets.locator.copyBytes(), ownFile: own.file,
                                  identityKey: identity?.rawRepresentation.copyBytes() ?? [], optional: optional)
        let file = try FormatTwoVault.sealOwnerRecord(record, patternSecrets: session.patternSecrets, random: session.random)
        try storage.replace(try FormatTwoKeys.unlockName(locator: session.patternSecrets.locator), contents: file)
        sharing.ownerOptional = optional
    }

    /// The recipient's key joins the list the owner's record keeps (tag 1025, §14.8), so that a
    /// withdrawal can seal this grant again to new keys. Written before the grant: a crash
    /// between the two leaves a key listed with no grant, which nothing uses.
    private mutating func rememberRecipient(_ recipient: [UInt8], identity: X25519.PrivateKey) throws {
        let known = VaultRotation.recipients(sharing.ownerOptional)
        guard !known.contains(recipient) else { return }
        try writeOwnerRecord(identity: identity, optional: VaultRotation.with(sharing.ownerOptional, tag: UnlockRecord.Tag.recipients,
                                                                              value: known.flatMap { $0 } + recipient))
    }

    /// Grants the vault to the holder of `recipient` (§14.7): the grant is created at its name
    /// in place of a free file of the vault, then a commit's root lists it (role 2).
    mutating func share(with recipient: [UInt8]) throws {
        try checkWritable()
        let identity = try ensureIdentity()
        let nameBytes = try GrantSeal.nameBytes(sharing: identity, with: recipient, location: Label.localLocation)
        guard let root = committer.formatTwo else { throw SharingError.formatOne }
        guard !root.specialFiles.contains(where: { $0.role == .grant && $0.name == nameBytes }) else { throw SharingError.alreadyShared }
        try rememberRecipient(recipient, identity: identity)
        let name = FileName.encode(nameBytes)
        // Shared again after a withdrawal: the ended grant's file takes the grant.
        let ended = root.specialFiles.firstIndex { $0.role == .endedGrant && $0.name == nameBytes }
        let ref: FileRef
        // A grant there that no root lists is what a share cut short left, with its free file
        // gone: a missing free number takes it, so the count stays. Otherwise a number of this
        // device (device 0 on the device that made the vault).
        let leftover = ended == nil ? try leftoverGrantNumber(at: name) : nil
        if let ended { ref = root.specialFiles[ended].file } else { ref = FileRef(raw: try leftover ?? writer.allocateUsable()) }
        let record = UnlockRecord(role: .grant, vaultKey: committer.vaultKey.copyBytes(), rootLocator: secrets.locator.copyBytes(),
                                  ownFile: ref)
        defer {
            record.vaultKey.wipeStorage()
            record.rootLocator.wipeStorage()
        }
        let file = try GrantSeal.seal(record, from: identity, to: recipient, random: session.random)
        if let ended {
            try storage.replace(name, contents: file)
            committer.formatTwo?.specialFiles[ended].role = .grant
        } else {
            if leftover != nil {
                try storage.replace(name, contents: file)
            } else if writer.allocator.needsCreate(ref.raw) {
                // A file of a group not made yet: the grant is made in its place.
                try storage.create(name, contents: file, durable: true)
                writer.allocator.markCreated(ref.raw)
            } else {
                // The free file takes the grant's bytes, then its name (R-BLK-5: the count never
                // moves; a cut leaves the free file, or the grant with the free number missing).
                let freeName = try self.name(ref.raw)
                try storage.write(freeName, offset: 0, bytes: file)
                try storage.sync([freeName])
                try storage.rename(freeName, to: name)
            }
            try storage.syncFolder()
            committer.formatTwo?.specialFiles.append(IndexRootV2.SpecialFile(file: ref, role: .grant, name: nameBytes))
        }
        tree.dirtyItems.insert(Format.rootItemID)
        try commit()
    }

    /// The free number a share cut short took for the grant at `name` that no root lists: one
    /// whose file is missing while the count is whole (`FileWriter.mayBeLent`). Nil when nothing
    /// is at the name; when a grant is there with no number missing (an earlier release made the
    /// grant before it removed the free file), the grant goes and the count is whole again.
    private mutating func leftoverGrantNumber(at name: String) throws -> UInt64? {
        guard try storage.entryExists(name) else { return nil }
        if try writer.mayBeLent() {
            var none: [UInt64] = []
            if let number = try writer.takeMissingNumber(lent: &none) { return number }
        }
        try storage.remove(name)
        return nil
    }

    /// §14.4: the vault that `sender` shared with the vault these pattern secrets open. No grant
    /// at its name is `noGrant`, as for a vault nobody shared with (and a new one, which has no
    /// identity yet); one that does not open is `GrantSeal.Failure`. Nothing is written before
    /// the grant has opened.
    static func openShared(storage: any StorageFolder, secrets patternSecrets: VaultSecrets, sender: [UInt8], random: any RandomSource,
                           clock: any VaultClock, options: OpenOptions) throws -> VaultState {
        let recipient = try ownIdentity(storage: storage, patternSecrets: patternSecrets, missing: .noGrant)
        do {
            let name = try GrantSeal.name(receiving: recipient, from: sender, location: Label.localLocation)
            guard let file = try storage.read(name) else { throw SharingError.noGrant }
            let record = try GrantSeal.open(file, recipient: recipient, sender: sender)
            guard record.role == .grant else { throw SharingError.accessEnded }
            if !options.readOnly { try storage.removeRecreationLeftovers() }
            var state = try openFormatTwo((name, record), storage: storage, secrets: patternSecrets, random: random, clock: clock,
                                          options: options)
            state.sharing.received = VaultSharing.Received(recipient: recipient, sender: sender)
            return state
        } catch {
            recipient.rawRepresentation.wipe()
            throw error
        }
    }

    /// The identity in the pattern's owner record: what a grant to this person's vault is sealed
    /// to. The record's other secrets are wiped; `missing` is thrown where there is none.
    static func ownIdentity(storage: any StorageFolder, patternSecrets: VaultSecrets, missing: SharingError) throws -> X25519.PrivateKey {
        guard let unlock = try FormatTwoVault.readUnlock(storage: storage, patternSecrets: patternSecrets) else { throw missing }
        let owner = unlock.record
        defer {
            owner.vaultKey.wipeStorage()
            owner.rootLocator.wipeStorage()
            owner.identityKey.wipeStorage()
        }
        guard !owner.identityKey.isEmpty else { throw missing }
        return try X25519.PrivateKey(rawRepresentation: owner.identityKey)
    }
}
