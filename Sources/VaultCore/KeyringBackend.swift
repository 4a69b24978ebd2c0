import VaultCrypto
import VaultFormat
import VaultStore

/// Where a keyring keeps its items: a file (the default) or the desktop's Secret Service.
public protocol KeyringBackend: Sendable {
    /// Where the keyring lives, for messages.
    var location: String { get }
    /// "at PATH" or "in the Secret Service …", for "no keyring …".
    var place: String { get }
    /// The stored items, or nil when there is no keyring yet.
    func load() throws -> [KeyringFile.Item]?
    /// Replaces the stored items, atomically.
    func save(_ items: [KeyringFile.Item]) throws
    /// Deletes the keyring (after `keyring move` has written and checked its new place).
    func remove() throws
}

extension KeyringBackend {
    public var place: String { "at \(location)" }
}

/// The keyring as one file (docs/FORMAT.md §8.1): mode 0600 in a 0700 folder, replaced
/// atomically, refused when others could read it.
public struct FileKeyringBackend: KeyringBackend {
    public let path: String
    public init(path: String) { self.path = path }

    public var location: String { path }

    /// What a keyring file holds: nothing yet, items, or a record of where the keyring is.
    public enum Content {
        case absent
        case items([KeyringFile.Item])
        case record(backend: String)
    }

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

    public func content() throws -> Content {
        let bytes: [UInt8]?
        do { bytes = try PrivateFile.read(path) } catch let failure as PrivateFile.Failure {
            throw KeyringError.storage("cannot read the keyring: \(failure)")
        }
        guard let bytes else { return .absent }
        let items: [KeyringFile.Item]
        do { items = try KeyringFile.decode(bytes, checksum: SHA256.hash).items } catch let error as FormatError {
            throw KeyringError.damaged(path: path, reason: error.description)
        }
        if let backend = KeyringRecord.backend(in: items) { return .record(backend: backend) }
        return .items(items)
    }

    /// The items; a record is never read as a keyring (that would be the silent fallback).
    public func load() throws -> [KeyringFile.Item]? {
        switch try content() {
        case .absent: nil
        case .items(let items): items
        case .record(let backend): throw KeyringError.unknownBackend(path: path, name: backend)
        }
    }

    public func save(_ items: [KeyringFile.Item]) throws { try write(items) }

    public func remove() throws {
        do { try PrivateFile.remove(path) } catch let failure as PrivateFile.Failure {
            throw KeyringError.storage("cannot remove the keyring \(path): \(failure)")
        }
    }

    /// Replaces the file with `items` (a keyring, or a record), atomically.
    func write(_ items: [KeyringFile.Item]) throws {
        do { try PrivateFile.writeAtomically(path, KeyringFile(items: items).encode(checksum: SHA256.hash)) } catch let failure as PrivateFile.Failure {
            throw KeyringError.storage("cannot write the keyring: \(failure)")
        }
    }
}

/// The keyring file that says where the keyring is instead of holding it (docs/FORMAT.md §8.1):
/// one item tagged `dotsafe.keyring-backend` whose `backend` attribute names the place. Every
/// command then uses that place or fails; none falls back to a file (R-KEY-4).
public enum KeyringRecord {
    public static let tag = "dotsafe.keyring-backend"
    public static let secretService = "secret-service"

    public static func item(backend: String) -> KeyringFile.Item {
        KeyringFile.Item(tag: tag, attributes: [("backend", backend)], secret: Array(backend.utf8))
    }

    static func backend(in items: [KeyringFile.Item]) -> String? {
        items.first { $0.tag == tag }.map { $0.attribute("backend") ?? "" }
    }
}
