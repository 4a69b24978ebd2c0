import Synchronization
import VaultCrypto
import VaultFormat

/// The three secrets a pattern gives (docs/FORMAT.md §2.2): the locator names the index slots,
/// the index key seals the index root, the names key names the vault's other files.
/// The pattern key they come from is wiped as soon as they exist (R-KEY-2).
public final class VaultSecrets: Sendable {
    let locator: SecretBytes
    let indexKey: SecretBytes
    let namesKey: SecretBytes
    /// Deriving a name costs an HKDF; a mounted vault asks for the same few names again and again.
    private let nameCache = Mutex<[UInt64: String]>([:])
    /// Format 2: this device's index in the device table (its files are named from `namesKey`),
    /// and the other devices' names keys, by index (docs/FORMAT.md §13.4, §13.11).
    let localDevice: UInt16
    private let otherDevices = Mutex<[UInt16: SecretBytes]>([:])

    /// Derives the secrets from a pattern key, then wipes the pattern key.
    public init(patternKey: SecretBytes) throws {
        defer { patternKey.wipe() }
        locator = try HKDF.deriveKey(from: patternKey, salt: [], info: Label.locator, count: Format.keySize)
        indexKey = try HKDF.deriveKey(from: patternKey, salt: [], info: Label.indexKey, count: Format.keySize)
        namesKey = try HKDF.deriveKey(from: patternKey, salt: [], info: Label.namesKey, count: Format.keySize)
        localDevice = 0
    }

    /// Format 2's storage secrets (docs/FORMAT.md §13.1): the root locator RL names the slots,
    /// the root key RK seals the roots, device 0's NKd names the other files. None of them comes
    /// from the pattern; they come from the unlock record and the root.
    init(rootLocator: SecretBytes, rootKey: SecretBytes, namesKey: SecretBytes, localDevice: UInt16 = 0) {
        locator = rootLocator
        indexKey = rootKey
        self.namesKey = namesKey
        self.localDevice = localDevice
    }

    /// Another device's names key (format 2, several devices): its files are named from it.
    func addDevice(_ device: UInt16, namesKey key: SecretBytes) {
        otherDevices.withLock { $0[device]?.wipe(); $0[device] = key }
    }

    /// The names key of a device of the table; nil for one this vault does not know.
    func namesKey(ofDevice device: UInt16) -> SecretBytes? {
        device == localDevice ? namesKey : otherDevices.withLock { $0[device] }
    }

    /// Device 0's number 0 or 1 at its names key, which no file takes (the slots are named from
    /// RL): a stand-in for that slot, which a root goes through before its slot name shows it
    /// (a new vault's group 0 made before its root, `FileWriter.makeGroupZero`).
    func standInName(_ slot: UInt64) throws -> String {
        guard let key = namesKey(ofDevice: 0) else { throw VaultError.damagedIndex("no names key of device 0") }
        return try Self.deviceFileName(slot, namesKey: key)
    }

    /// PBKDF2 of the canonical pattern bytes (the slow step), then the three secrets.
    /// The pattern's bytes go from its locked memory straight into PBKDF2.
    public convenience init(pattern: Pattern, salt: [UInt8], rounds: Int) throws {
        try self.init(pattern: pattern, salt: Keyring.PatternSalt(salt: salt, kdf: .pbkdf2(rounds: rounds)))
    }

    /// The keyring's KDF over the pattern's canonical bytes (the slow step), then the three
    /// secrets. The bytes go from the pattern's locked memory straight into the KDF.
    public convenience init(pattern: Pattern, salt: Keyring.PatternSalt) throws {
        try self.init(patternKey: salt.kdf.deriveKey(password: pattern.secret, salt: salt.salt))
    }

    /// Name of index slot 0 or 1 at a location ("local" for this device's storage).
    public func indexName(slot: UInt8, location: [UInt8] = Label.localLocation) throws -> String {
        FileName.encode(try HKDF.deriveBytes(from: locator, salt: [], info: Label.indexName + [slot] + location,
                                             count: Format.nameBytes))
    }

    /// Name of the vault's file number `number`; 0 and 1 are the index slots. Format 2: a
    /// FileRef's raw value, named from its device's key (docs/FORMAT.md §13.4).
    public func fileName(_ number: UInt64) throws -> String {
        if let cached = nameCache.withLock({ $0[number] }) { return cached }
        let name: String
        if number < Format.indexSlotCount {
            name = try indexName(slot: UInt8(number))
        } else {
            let file = FileRef(raw: number)
            guard let key = namesKey(ofDevice: file.device) else { throw VaultError.damagedIndex("file \(file) of an unknown device") }
            name = try Self.deviceFileName(file.number, namesKey: key)
        }
        nameCache.withLock { $0[number] = name }
        return name
    }

    /// base32(HKDF(NKd, "DotSafe v1 file name" || u64 number, 16)): a device's file (§13.4).
    static func deviceFileName(_ number: UInt64, namesKey key: SecretBytes) throws -> String {
        var info = Label.fileName
        withUnsafeBytes(of: number.littleEndian) { info.append(contentsOf: $0) }
        return FileName.encode(try HKDF.deriveBytes(from: key, salt: [], info: info, count: Format.nameBytes))
    }

    /// Reads and writes of file `number` go to `name` (a pattern change moving the names of an
    /// upgraded vault finds each file at its old name or its new one, docs/FORMAT.md §13.12).
    func pinName(_ number: UInt64, _ name: String) {
        nameCache.withLock { $0[number] = name }
    }

    /// A name that is the same for every mount of this vault on this storage and tells nothing
    /// about the pattern: the mount guard's socket name (R-FS-3).
    public func mountGuardName(storageDevice: UInt64, storageInode: UInt64) throws -> String {
        var info = Label.mountGuard
        withUnsafeBytes(of: storageDevice.littleEndian) { info.append(contentsOf: $0) }
        withUnsafeBytes(of: storageInode.littleEndian) { info.append(contentsOf: $0) }
        let digest = try HKDF.deriveBytes(from: locator, salt: [], info: info, count: 16)
        return "dotsafe-vault-" + digest.map { String($0, radix: 16).leftPadded(2) }.joined()
    }

    /// The same pattern's secrets in memory of their own, for a second open (each open wipes
    /// what it was given): one key derivation for both. Pattern secrets only (no other devices).
    public func copy() throws -> VaultSecrets {
        let copy = { (key: SecretBytes) in try key.withUnsafeBytes { try SecretBytes(copying: $0) } }
        return VaultSecrets(rootLocator: try copy(locator), rootKey: try copy(indexKey), namesKey: try copy(namesKey), localDevice: localDevice)
    }

    public func wipe() {
        locator.wipe()
        indexKey.wipe()
        namesKey.wipe()
        otherDevices.withLock { devices in for key in devices.values { key.wipe() } }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
