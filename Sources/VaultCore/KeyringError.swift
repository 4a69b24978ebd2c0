/// Why the keyring could not do what was asked. The description is the line users see.
public enum KeyringError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `add` with a tag that is in the keyring already (the Keychain's errSecDuplicateItem).
    case duplicateItem(String)
    /// The random source failed: no secret was made (the seed's failedToGenerateEncryptedKey).
    case generationFailed
    case itemNotFound(String)
    /// No keyring where one is needed; the text is the place ("at PATH").
    case missing(String)
    /// The file is not a keyring, or its checksum fails.
    case damaged(path: String, reason: String)
    /// The file to import is not a keyring export this DotSafe can read; the text is the line.
    case unreadableExport(String)
    /// The keyring asks for fewer rounds than DotSafe accepts (R-KEY-5).
    case weakKDF(PatternKDF)
    case unknownKDF(String)
    /// Reading or writing the file failed; the text says how.
    case storage(String)
    /// The export's passphrase is wrong or the export is damaged (the seal does not open).
    case wrongPassphrase
    /// The Secret Service cannot be reached, is locked or refused; the text says which.
    case secretService(String)
    /// The keyring file is a record naming a place this DotSafe does not know.
    case unknownBackend(path: String, name: String)
    /// Where a storage exists but its keyring does not (mount, fsck).
    case missingForStorage(String)
    /// Import would replace a different salt: vaults made with the current one would look empty.
    case conflictingItem(String)

    public var description: String {
        switch self {
        case .duplicateItem(let tag): "the keyring already has an item '\(tag)'"
        case .generationFailed: "could not make a random secret: the system's random source failed"
        case .itemNotFound(let tag): "the keyring has no item '\(tag)'"
        case .missing(let place): "no keyring \(place) (make one with 'dotsafe init STORAGE', or import one with 'dotsafe keyring import')"
        case .missingForStorage(let path):
            "the keyring is missing (\(path)): the vaults in this storage need the salt they were made with; import your backup with 'dotsafe keyring import FILE' or 'dotsafe keyring import --text' ('dotsafe init' would make a new keyring that opens none of them)"
        case .secretService(let text): text
        case .unknownBackend(let path, let name): "the keyring \(path) says the keyring is in '\(name)', which this DotSafe does not know: refused"
        case .damaged(let path, let reason): "the keyring \(path) is damaged: \(reason)"
        case .unreadableExport(let text): text
        case .weakKDF(.pbkdf2(let rounds)):
            "the keyring asks for \(rounds) PBKDF2 rounds, fewer than 600000: refused (a planted keyring could weaken your vault)"
        case .weakKDF(let kdf):
            "the keyring asks for \(kdf), less than 64 MiB: refused (a planted keyring could weaken your vault)"
        case .unknownKDF(let name): "the keyring names an unknown key derivation '\(name)'"
        case .storage(let text): text
        case .wrongPassphrase: "the passphrase is wrong, or the export is damaged"
        case .conflictingItem(let tag):
            "the keyring already has a different '\(tag)': importing would make the vaults made with it look empty (use --replace if you mean it)"
        }
    }
}
