import VaultCrypto
import VaultFormat
import VaultStore

/// The top of format 2's key chain (docs/FORMAT.md §13.1, §13.3): from the pattern's locator
/// and index key to the owner's unlock record, and from its vault key and root locator to the
/// secrets that name and seal the storage's files.
enum FormatTwoVault {
    /// A new vault's secrets, its root's fixed part, its identity (§14), and its unlock record,
    /// sealed for the pattern (written before any other file: `FileWriter.writeUnlockRecord`).
    /// The record takes the lowest free number of group 0.
    static func create(patternSecrets: VaultSecrets, vaultKey: SecretBytes, allocator: inout FileAllocator,
                       random: any RandomSource) throws
        -> (secrets: VaultSecrets, root: FormatTwoRoot, unlock: (name: String, file: [UInt8]), identity: X25519.PrivateKey) {
        let rootLocator = try SecretBytes.random(count: Format.keySize, using: random)
        let identity = try X25519.PrivateKey(using: random)
        let rootKey = try FormatTwoKeys.rootKey(vaultKey: vaultKey)
        let secrets = VaultSecrets(rootLocator: rootLocator, rootKey: rootKey,
                                   namesKey: try FormatTwoKeys.firstDeviceNamesKey(vaultKey: vaultKey))
        let number = allocator.allocate()
        allocator.markCreated(number)  // its file has the pattern's name, not a device name
        let file = FileRef(device: 0, number: number)
        let record = UnlockRecord(vaultKey: vaultKey.copyBytes(), rootLocator: rootLocator.copyBytes(), ownFile: file,
                                  identityKey: identity.rawRepresentation.copyBytes())
        let sealed = try sealOwnerRecord(record, patternSecrets: patternSecrets, random: random)
        let nameBytes = try FormatTwoKeys.unlockNameBytes(locator: patternSecrets.locator)
        var prefix: UInt32 = 0
        while prefix == 0 { prefix = UInt32(truncatingIfNeeded: try random.uniform(Int(UInt32.max)) + 1) }
        let root = FormatTwoRoot(rootKey: rootKey, deviceID: try random.bytes(DeviceEntry.idSize), itemPrefix: prefix, deviceName: [],
                                 specialFiles: [IndexRootV2.SpecialFile(file: file, role: .ownerUnlock, name: nameBytes)])
        return (secrets, root, (FileName.encode(nameBytes), sealed), identity)
    }

    /// The owner's unlock record (§13.3: VK, RL, the file that holds it), sealed for the pattern;
    /// no identity yet (an upgraded vault gets one when sharing first needs it, §14.7).
    static func sealUnlock(vaultKey: SecretBytes, rootLocator: SecretBytes, file: FileRef, patternSecrets: VaultSecrets,
                           random: any RandomSource) throws -> [UInt8] {
        try sealOwnerRecord(UnlockRecord(vaultKey: vaultKey.copyBytes(), rootLocator: rootLocator.copyBytes(), ownFile: file),
                            patternSecrets: patternSecrets, random: random)
    }

    /// The owner's record sealed for the pattern (kind 4, IK, `lp8("local")`); wipes the
    /// record's keys where every copy of them reads.
    static func sealOwnerRecord(_ record: UnlockRecord, patternSecrets: VaultSecrets, random: any RandomSource) throws -> [UInt8] {
        var body = record.encode()
        defer {
            Sealer.wipe(&body)
            record.vaultKey.wipeStorage()
            record.rootLocator.wipeStorage()
            record.identityKey.wipeStorage()
        }
        return try Sealer.sealEnvelope(kind: .unlockRecord, version: StorageFormat.two.envelopeVersion, body: body[...],
                                       key: .secret(patternSecrets.indexKey), seal: .unlock(location: Label.localLocation),
                                       random: random).file
    }

    /// What a pattern's names hold in a storage, without opening anything: an owner record
    /// (format 2), an index slot (format 1), or nothing (the pattern opens a new, empty vault).
    static func use(of patternSecrets: VaultSecrets, in storage: any StorageFolder) throws -> Vault.PatternUse {
        if try storage.entryExists(try FormatTwoKeys.unlockName(locator: patternSecrets.locator)) { return .formatTwo }
        for slot in 0..<UInt8(Format.indexSlotCount) where try storage.entryExists(try patternSecrets.indexName(slot: slot)) {
            return .formatOne
        }
        return .none
    }

    /// The owner's unlock record at the pattern's name, opened and decoded; nil when no file is
    /// there (a format-1 vault, or none). Something there that does not open is damage.
    static func readUnlock(storage: any StorageFolder, patternSecrets: VaultSecrets) throws -> (name: String, record: UnlockRecord)? {
        let name = try FormatTwoKeys.unlockName(locator: patternSecrets.locator)
        guard try storage.entryExists(name) else { return nil }
        do {
            guard let file = try storage.read(name) else { throw CryptoError.authenticationFailed }
            return (name, try openUnlock(file, patternSecrets: patternSecrets))
        } catch FormatError.newerVersion(let version) {
            throw VaultError.newerFormat(version)
        } catch {
            throw VaultError.damagedIndex("the vault's unlock record does not open with this pattern")
        }
    }

    /// An owner's unlock record file of this storage, opened with the pattern and decoded.
    static func openUnlock(_ file: [UInt8], patternSecrets: VaultSecrets) throws -> UnlockRecord {
        let body = try Sealer.openEnvelope(file, expectedNonce: nil, kind: .unlockRecord, version: StorageFormat.two.envelopeVersion,
                                           key: .secret(patternSecrets.indexKey), seal: .unlock(location: Label.localLocation))
        defer { body.wipeStorage() }
        return try UnlockRecord.decode(body[...])
    }

    /// What the two slots say (design §E, "both slots hold the newest root"): nil when they are
    /// at rest or as a crash leaves them; else why a root the vault committed is not there.
    /// `slots[s]`: nil when slot s has no file, .some(nil) when it does not open.
    static func rollbackWarning(_ slots: [UInt64?? ]) -> String? {
        let generations = slots.compactMap { $0 ?? nil }
        guard let newest = generations.max() else { return nil }
        let original = Int(newest % Format.indexSlotCount), other = 1 - original
        guard case .some(.some(newest)) = slots[original] else {
            return "the newest root's own index slot is missing, damaged or older; opened generation \(newest) from its copy"
        }
        switch slots[other] {
        case .none where newest > 1:
            return "index slot \(other) is missing; opened generation \(newest)"
        case .some(.some(let generation)) where generation + 1 < newest:
            return "index slot \(other) was rolled back to generation \(generation); opened generation \(newest)"
        default:
            return nil
        }
    }
}
