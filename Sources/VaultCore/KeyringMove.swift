import VaultCrypto
import VaultFormat

/// `dotsafe keyring move`: the keyring to the Secret Service or to a file, crash-safe. The new
/// copy is written and read back before the old one goes, so at every instant one of them holds
/// the salt; a place that holds a different keyring is refused.
public enum KeyringMove {
    /// Moves the keyring from `source` to `target`. Into the Secret Service, the record that
    /// points there is written last, replacing the file keyring.
    public static func move(from source: any KeyringBackend, to target: any KeyringBackend) throws {
        guard let items = try source.load() else { throw KeyringError.missing(source.place) }
        let expected = encoded(items)
        if let present = try presentItems(target) {
            guard encoded(present) == expected else {
                throw KeyringError.storage("\(target.location) already holds a different keyring: moving would lose one of the two salts; nothing was changed")
            }
        }
        try target.save(items)
        guard let written = try target.load(), encoded(written) == expected else {
            throw KeyringError.storage("the keyring read back from \(target.location) differs from what was written: the old one is kept")
        }
        switch (source, target) {
        case (let file as FileKeyringBackend, let secretService as SecretServiceKeyringBackend):
            // The record replaces the file atomically: this is where the file keyring goes.
            try secretService.writeRecord()
            if file.path != secretService.recordPath { try file.remove() }
        case (let secretService as SecretServiceKeyringBackend, let file as FileKeyringBackend):
            try secretService.remove()
            // The record now points at nothing: it goes too, unless the keyring took its place.
            if file.path != secretService.recordPath { try FileKeyringBackend(path: secretService.recordPath).remove() }
        default:
            try source.remove()
        }
    }

    /// What the target holds; a record there (the one being moved from) is no keyring.
    private static func presentItems(_ target: any KeyringBackend) throws -> [KeyringFile.Item]? {
        guard let file = target as? FileKeyringBackend else { return try target.load() }
        if case .items(let items) = try file.content() { return items }
        return nil
    }

    private static func encoded(_ items: [KeyringFile.Item]) -> [UInt8] {
        KeyringFile(items: items).encode(checksum: SHA256.hash)
    }
}
