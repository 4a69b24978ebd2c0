import VaultCrypto
import VaultFormat

/// The derivations of format 2 (docs/FORMAT.md §13.1-§13.3) that are not random keys: the
/// owner's unlock record's name from the locator, the root key from the vault key, and the root
/// slots' names from the root locator.
enum FormatTwoKeys {
    /// base32(HKDF(LOC, "DotSafe v2 unlock name" || lp8(location), 16)).
    static func unlockName(locator: SecretBytes, location: [UInt8] = Label.localLocation) throws -> String {
        FileName.encode(try unlockNameBytes(locator: locator, location: location))
    }

    /// The 16 bytes of that name, as the root's special files list them.
    static func unlockNameBytes(locator: SecretBytes, location: [UInt8] = Label.localLocation) throws -> [UInt8] {
        try HKDF.deriveBytes(from: locator, salt: [], info: Label.unlockName + [UInt8(location.count)] + location, count: Format.nameBytes)
    }

    /// NKd of the device that creates a vault: HKDF(VK, "DotSafe v2 first device names", 32).
    static func firstDeviceNamesKey(vaultKey: SecretBytes) throws -> SecretBytes {
        try HKDF.deriveKey(from: vaultKey, salt: [], info: Label.firstDeviceNames, count: Format.keySize)
    }

    /// RK = HKDF(VK, "DotSafe v2 root key", 32).
    static func rootKey(vaultKey: SecretBytes) throws -> SecretBytes {
        try HKDF.deriveKey(from: vaultKey, salt: [], info: Label.rootKey, count: Format.keySize)
    }

    /// Slot `slot`'s name: format 1's index name with RL in place of LOC.
    static func slotName(rootLocator: SecretBytes, slot: UInt8, location: [UInt8] = Label.localLocation) throws -> String {
        FileName.encode(try HKDF.deriveBytes(from: rootLocator, salt: [], info: Label.indexName + [slot] + location,
                                             count: Format.nameBytes))
    }
}
