import VaultCrypto
import VaultFormat
import VaultStore

/// Where a keyring keeps its items. The file backend is the default; a Secret Service backend
/// (GNOME Keyring, KWallet through libsecret) can implement the same two calls later.
public protocol KeyringBackend: Sendable {
    /// Where the keyring lives, for messages.
    var location: String { get }
    /// The stored items, or nil when there is no keyring yet.
    func load() throws -> [KeyringFile.Item]?
    /// Replaces the stored items, atomically.
    func save(_ items: [KeyringFile.Item]) throws
}

/// The keyring as one file (docs/FORMAT.md §8.1): mode 0600 in a 0700 folder, replaced
/// atomically, refused when others could read it.
public struct FileKeyringBackend: KeyringBackend {
    public let path: String
    public init(path: String) { self.path = path }

    public var location: String { path }

    /// `--keyring PATH`, else `DOTSAFE_KEYRING`, else `$XDG_DATA_HOME/dotsafe/keyring`
    /// (`~/.local/share/dotsafe/keyring`).
    public static func path(option: String?, environment: [String: String]) -> String {
        if let option, !option.isEmpty { return option }
        if let variable = environment["DOTSAFE_KEYRING"], !variable.isEmpty { return variable }
        return dataFolder(environment: environment) + "/keyring"
    }

    /// `$XDG_DATA_HOME/dotsafe`, or `~/.local/share/dotsafe`.
    public static func dataFolder(environment: [String: String]) -> String {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data + "/dotsafe" }
        return (environment["HOME"] ?? "/root") + "/.local/share/dotsafe"
    }

    public func load() throws -> [KeyringFile.Item]? {
        let bytes: [UInt8]?
        do { bytes = try PrivateFile.read(path) } catch let failure as PrivateFile.Failure {
            throw KeyringError.storage("cannot read the keyring: \(failure)")
        }
        guard let bytes else { return nil }
        do {
            return try KeyringFile.decode(bytes, checksum: SHA256.hash).items
        } catch let error as FormatError {
            throw KeyringError.damaged(path: path, reason: error.description)
        }
    }

    public func save(_ items: [KeyringFile.Item]) throws {
        do { try PrivateFile.writeAtomically(path, KeyringFile(items: items).encode(checksum: SHA256.hash)) } catch let failure as PrivateFile.Failure {
            throw KeyringError.storage("cannot write the keyring: \(failure)")
        }
    }
}
