import VaultCrypto
import VaultFormat

/// The keyring as one item of the Secret Service (GNOME Keyring, KWallet): the bytes of a
/// keyring file (docs/FORMAT.md §8.1), so the checksum and KDF parameters travel with the salt.
/// `recordPath` is the file that records this choice.
public struct SecretServiceKeyringBackend: KeyringBackend {
    public let recordPath: String
    private let environment: [String: String]

    public init(recordPath: String, environment: [String: String]) {
        self.recordPath = recordPath
        self.environment = environment
    }

    public var location: String { "the Secret Service (recorded in \(recordPath))" }
    public var place: String { "in \(location)" }

    public func load() throws -> [KeyringFile.Item]? {
        guard let bytes = try SecretServiceCalls.read(environment: environment) else { return nil }
        do { return try KeyringFile.decode(bytes, checksum: SHA256.hash).items } catch let error as FormatError {
            throw KeyringError.damaged(path: "in the Secret Service", reason: error.description)
        }
    }

    public func save(_ items: [KeyringFile.Item]) throws {
        try SecretServiceCalls.write(KeyringFile(items: items).encode(checksum: SHA256.hash), environment: environment)
    }

    public func remove() throws { try SecretServiceCalls.remove(environment: environment) }

    /// Where the record goes must not hold a file keyring: replacing it would lose its salt.
    public func checkRecordPlace() throws {
        if case .items(let items) = try FileKeyringBackend(path: recordPath).content(), !items.isEmpty {
            throw KeyringError.storage(
                "\(recordPath) is a keyring file with a salt: move it with 'dotsafe keyring move secret-service' instead of making a new one")
        }
    }

    /// Writes the file that sends every later command to the Secret Service.
    public func writeRecord() throws {
        try FileKeyringBackend(path: recordPath).write([KeyringRecord.item(backend: KeyringRecord.secretService)])
    }
}
