import VaultCrypto
import VaultFormat
import VaultStore

/// Withdrawing a grant (docs/FORMAT.md §14.8): the vault gets a new vault key VK' and root
/// locator RL', its root moves to RL''s slot names sealed with RK', the other grants are sealed
/// again to the new keys and the withdrawn one becomes an ended grant. The owner's record is the
/// state of the rotation, replaced atomically at each step, so that a rotation cut short is
/// finished, or undone, by the next open that writes:
///
///     (VK, RL) → (VK, RL, tag 1024 VK'‖RL') → roots at RL' (lent free files) → grants
///              → (VK', RL') → old slots into the lent numbers (the writing open that follows)
///
/// The owner's pattern opens the whole vault at each instant: the old root until the record
/// holds VK', the new one (the same index) after. The storage's file count does not change at
/// any step (R-BLK-5, FORMAT.md §14.8, "The file count of a withdrawal"): the new root names
/// the old slots (root extension tag 1024), which the open renames into the numbers lent.
enum VaultRotation {
    /// Steps 1 and 2, on a vault whose session is committed: the record announces VK' and RL',
    /// then root g+1 (`current` with the grant named `revoked` ended, naming RL's slots to
    /// retire) goes into both slots at RL''s names: each written over a free file of the vault
    /// (`lent`, names of numbers the committed root counts free), synced, and renamed to its
    /// slot name, so that the name never shows bytes that are not on disk and the storage's count
    /// stays. A slot with no file lent is created (a count one over: the caller always lends two).
    /// Returns the record `resume` finishes.
    static func start(storage: any StorageFolder, patternSecrets: VaultSecrets, owner: UnlockRecord, current: IndexRootV2,
                      revoked: [UInt8], lent: [String], random: any RandomSource) throws -> UnlockRecord {
        let vaultKey = try SecretBytes.random(count: Format.keySize, using: random)
        let rootLocator = try SecretBytes.random(count: Format.keySize, using: random)
        defer { vaultKey.wipe(); rootLocator.wipe() }
        var pending = owner
        pending.optional = with(owner.optional, tag: UnlockRecord.Tag.rotation, value: vaultKey.copyBytes() + rootLocator.copyBytes())
        try writeOwnerRecord(pending, storage: storage, patternSecrets: patternSecrets, random: random)

        var root = current
        root.generation += 1
        for index in root.specialFiles.indices where root.specialFiles[index].role == .grant && root.specialFiles[index].name == revoked {
            root.specialFiles[index].role = .endedGrant
        }
        // The old slots stay until the switch; the writing open after it moves them (§14.8).
        root.extensions = (root.extensions.filter { $0.tag != IndexRootV2.retiringSlotsTag }
            + [IndexRootV2.Extension(tag: IndexRootV2.retiringSlotsTag, value: owner.rootLocator.map { $0 })]).sorted { $0.tag < $1.tag }
        let rootKey = try FormatTwoKeys.rootKey(vaultKey: vaultKey)
        defer { rootKey.wipe() }
        // The original slot first, as a commit writes it.
        let first = root.generation % Format.indexSlotCount
        var lent = lent
        for slot in [first, 1 - first] {
            let name = try FormatTwoKeys.slotName(rootLocator: rootLocator, slot: UInt8(slot))
            let file = try Committer.sealRootV2(root, slot: slot, rootKey: rootKey, random: random)
            if try storage.entryExists(name) {
                try storage.write(name, offset: 0, bytes: file)
                try storage.sync([name])
            } else if !lent.isEmpty {
                let free = lent.removeFirst()
                try storage.write(free, offset: 0, bytes: file)
                try storage.sync([free])
                try storage.rename(free, to: name)
            } else {
                try storage.create(name, contents: file, durable: true)
            }
        }
        try storage.syncFolder()
        return pending
    }

    /// Steps 3 and 4 for a record that holds tag 1024, and the removal of the old slots for one
    /// that holds tag 1026 (a rotation an earlier release started; any other comes back as it is).
    /// Tag 1024 with no root at RL' is a rotation cut before its step 2 ended: its files go and
    /// the vault is as before. Read-only, nothing is written and the record to open with is
    /// returned: VK' and RL' once their root exists.
    /// `readsIndexThree`: whether this open reads index 3 (§15.1); without it, a vault whose
    /// roots are of version 3 is refused as newer before anything is written (its record, its
    /// grants, the new slots), as the open of its root would refuse it right after.
    static func resume(_ owner: UnlockRecord, storage: any StorageFolder, patternSecrets: VaultSecrets, readOnly: Bool,
                       readsIndexThree: Bool, random: any RandomSource) throws -> UnlockRecord {
        var record = owner
        if let value = record.optional.first(where: { $0.tag == UnlockRecord.Tag.rotation })?.value {
            guard value.count == 2 * Format.keySize else { throw VaultError.damagedIndex("the owner's record holds a damaged rotation") }
            let vaultKey = try SecretBytes(copying: Array(value[..<Format.keySize]))
            let rootLocator = try SecretBytes(copying: Array(value[Format.keySize...]))
            let rootKey = try FormatTwoKeys.rootKey(vaultKey: vaultKey)
            defer { vaultKey.wipe(); rootLocator.wipe(); rootKey.wipe() }
            record.optional = without(record.optional, tag: UnlockRecord.Tag.rotation)
            guard let root = try newestRoot(storage: storage, rootLocator: rootLocator, rootKey: rootKey, readsIndexThree: readsIndexThree) else {
                if readOnly { return record }
                // Undone below: the old root is the vault's, and must be one this release reads.
                try refuseNewer(storage: storage, owner: owner, readsIndexThree: readsIndexThree)
                for slot in 0..<UInt8(Format.indexSlotCount) {
                    let name = try FormatTwoKeys.slotName(rootLocator: rootLocator, slot: slot)
                    if try storage.entryExists(name) { try storage.remove(name) }
                }
                try storage.syncFolder()
                try writeOwnerRecord(record, storage: storage, patternSecrets: patternSecrets, random: random)
                return record
            }
            defer { root.wipeKeys() }
            // Copies of their own: they go into tags 1026 and 1027, read after this block.
            let oldLocator = record.rootLocator.map { $0 }, oldKey = record.vaultKey.map { $0 }
            defer { oldKey.wipeStorage() }
            record.vaultKey.wipeStorage()
            record.rootLocator.wipeStorage()
            record.vaultKey = vaultKey.copyBytes()
            record.rootLocator = rootLocator.copyBytes()
            if readOnly { return record }
            // A root that does not name the old slots (a rotation an earlier release started):
            // a slot a cut step 2 left missing is sealed again, and the record names the old
            // slots (tag 1026) for their removal below. Otherwise the open of the new root lends
            // a free file to a missing slot and moves the old slots (§14.8).
            let rootNamesOldSlots = root.extensions.contains { $0.tag == IndexRootV2.retiringSlotsTag }
            for slot in 0..<Format.indexSlotCount where !rootNamesOldSlots {
                let name = try FormatTwoKeys.slotName(rootLocator: rootLocator, slot: UInt8(slot))
                guard try !storage.entryExists(name) else { continue }
                let file = try Committer.sealRootV2(root, slot: slot, rootKey: rootKey, random: random)
                try storage.create(name, contents: file, durable: true)
                try storage.syncFolder()
            }
            try reissueGrants(root, owner: record, storage: storage, random: random)
            // Step 4, the commit point: the record names the new root.
            if !rootNamesOldSlots { record.optional = with(record.optional, tag: UnlockRecord.Tag.retiring, value: oldLocator) }
            // A synced vault's remote still holds the old keys: its next sync moves it (§14.8).
            // After an earlier withdrawal not yet synced, the remote holds the keys that tag names.
            if root.extensions.contains(where: { $0.tag == SyncBase.extensionTag }),
               !record.optional.contains(where: { $0.tag == UnlockRecord.Tag.rotatedFrom }) {
                record.optional = with(record.optional, tag: UnlockRecord.Tag.rotatedFrom, value: oldKey + oldLocator)
            }
            try writeOwnerRecord(record, storage: storage, patternSecrets: patternSecrets, random: random)
        }
        guard let retiring = record.optional.first(where: { $0.tag == UnlockRecord.Tag.retiring })?.value, !readOnly else { return record }
        guard retiring.count == Format.keySize else { throw VaultError.damagedIndex("the owner's record holds a damaged rotation") }
        try refuseNewer(storage: storage, owner: record, readsIndexThree: readsIndexThree)
        let oldLocator = try SecretBytes(copying: retiring)
        defer { oldLocator.wipe() }
        for slot in 0..<UInt8(Format.indexSlotCount) {
            let name = try FormatTwoKeys.slotName(rootLocator: oldLocator, slot: slot)
            if try storage.entryExists(name) { try storage.remove(name) }
        }
        try storage.syncFolder()
        record.optional = without(record.optional, tag: UnlockRecord.Tag.retiring)
        try writeOwnerRecord(record, storage: storage, patternSecrets: patternSecrets, random: random)
        return record
    }

    /// Step 3: each grant the new root lists, sealed again with the record's VK' and RL' at its
    /// name (an ended one as an ended grant), by the storage's atomic replace. A grant whose
    /// recipient the record does not list cannot be sealed again (`unshare` refuses first).
    static func reissueGrants(_ root: IndexRootV2, owner: UnlockRecord, storage: any StorageFolder, random: any RandomSource) throws {
        try reissueGrants(root.specialFiles, owner: owner, storage: storage, random: random)
    }

    static func reissueGrants(_ specialFiles: [IndexRootV2.SpecialFile], owner: UnlockRecord, storage: any StorageFolder,
                              random: any RandomSource) throws {
        let identity = try X25519.PrivateKey(rawRepresentation: owner.identityKey)
        defer { identity.rawRepresentation.wipe() }
        let recipients = Self.recipients(owner.optional)
        for special in specialFiles where special.role == .grant || special.role == .endedGrant {
            guard let recipient = try recipients.first(where: {
                try GrantSeal.nameBytes(sharing: identity, with: $0, location: Label.localLocation) == special.name
            }) else { continue }
            let grant = special.role == .grant
                ? UnlockRecord(role: .grant, vaultKey: owner.vaultKey.map { $0 }, rootLocator: owner.rootLocator.map { $0 },
                               ownFile: special.file)
                : UnlockRecord(role: .ended, vaultKey: [], rootLocator: [], ownFile: special.file)
            defer { grant.vaultKey.wipeStorage(); grant.rootLocator.wipeStorage() }
            let file = try GrantSeal.seal(grant, from: identity, to: recipient, random: random)
            try storage.replace(FileName.encode(special.name), contents: file)
        }
    }

    /// The newest root that opens in the two slots named from `rootLocator`; nil when none does.
    /// A root of a version this release does not read (version 3 without `readsIndexThree`) is
    /// no torn slot: it is refused as newer (`VaultError.newerFormat`), as the open refuses it.
    static func newestRoot(storage: any StorageFolder, rootLocator: SecretBytes, rootKey: SecretBytes,
                           readsIndexThree: Bool) throws -> IndexRootV2? {
        var newest: IndexRootV2?
        for slot in 0..<Format.indexSlotCount {
            // A slot torn by a crash (not of the storage's form) is one that does not open.
            let name = try FormatTwoKeys.slotName(rootLocator: rootLocator, slot: UInt8(slot))
            guard let file = (try? storage.read(name)) ?? nil else { continue }
            // Index 3 too when read: a rotation seals the root again as it found it (EHK kept, §15.7).
            let root: IndexRootV2
            do {
                root = try VaultState.openRoot(file, slot: slot, rootKey: rootKey, readsIndexThree: readsIndexThree)
            } catch FormatError.newerVersion(let version) {
                newest?.wipeKeys()
                throw VaultError.newerFormat(version)
            } catch {
                continue
            }
            if let older = newest, older.generation >= root.generation { root.wipeKeys(); continue }
            newest?.wipeKeys()
            newest = root
        }
        return newest
    }

    /// Throws `VaultError.newerFormat` when the root `owner`'s VK and RL name is of a version
    /// this release does not read: checked before a step of `resume` writes without having read it.
    private static func refuseNewer(storage: any StorageFolder, owner: UnlockRecord, readsIndexThree: Bool) throws {
        guard !readsIndexThree else { return }
        let vaultKey = try SecretBytes(copying: owner.vaultKey), rootLocator = try SecretBytes(copying: owner.rootLocator)
        let rootKey = try FormatTwoKeys.rootKey(vaultKey: vaultKey)
        defer { vaultKey.wipe(); rootLocator.wipe(); rootKey.wipe() }
        try newestRoot(storage: storage, rootLocator: rootLocator, rootKey: rootKey, readsIndexThree: false)?.wipeKeys()
    }

    /// The public keys of the codes the vault was shared with (tag 1025, 32 bytes each).
    static func recipients(_ optional: [IndexRootV2.Extension]) -> [[UInt8]] {
        guard let value = optional.first(where: { $0.tag == UnlockRecord.Tag.recipients })?.value else { return [] }
        let size = Format.keySize
        return stride(from: 0, to: value.count - value.count % size, by: size).map { Array(value[$0 ..< $0 + size]) }
    }

    static func with(_ optional: [IndexRootV2.Extension], tag: UInt16, value: [UInt8]) -> [IndexRootV2.Extension] {
        (without(optional, tag: tag) + [IndexRootV2.Extension(tag: tag, value: value)]).sorted { $0.tag < $1.tag }
    }

    static func without(_ optional: [IndexRootV2.Extension], tag: UInt16) -> [IndexRootV2.Extension] {
        optional.filter { $0.tag != tag }
    }

    /// The owner's record sealed anew and put in place by the storage's atomic replace (§14.7).
    /// The record's arrays stay the caller's: the seal wipes copies of them.
    static func writeOwnerRecord(_ record: UnlockRecord, storage: any StorageFolder, patternSecrets: VaultSecrets,
                                 random: any RandomSource) throws {
        let copy = UnlockRecord(vaultKey: record.vaultKey.map { $0 }, rootLocator: record.rootLocator.map { $0 }, ownFile: record.ownFile,
                                identityKey: record.identityKey.map { $0 }, optional: record.optional)
        let file = try FormatTwoVault.sealOwnerRecord(copy, patternSecrets: patternSecrets, random: random)
        try storage.replace(try FormatTwoKeys.unlockName(locator: patternSecrets.locator), contents: file)
    }
}
