import Synchronization
import VaultCrypto
import VaultFormat

/// The user's keyring (R-KEY-3, R-KEY-4): tagged items of random bytes, made from the OS random
/// source. DotSafe keeps one item, the pattern salt, with its KDF parameters: one salt for every
/// storage, so a second machine with the same keyring derives the same keys.
public final class Keyring: Sendable {
    public static let patternSaltTag = "dotsafe.pattern-salt"
    public static let saltSize = 32

    /// The salt, and how a pattern key is derived with it.
    public struct PatternSalt: Equatable, Sendable {
        public var salt: [UInt8]
        public var kdf: PatternKDF
        public init(salt: [UInt8], kdf: PatternKDF) { self.salt = salt; self.kdf = kdf }
    }

    public let backend: any KeyringBackend
    private let random: any RandomSource
    /// `DOTSAFE_ALLOW_WEAK_KDF=1`: tests may use fewer rounds; nobody else may.
    let allowWeakKDF: Bool
    /// Serialises read-modify-write of the backend within this process.
    private let mutation = Mutex(())

    public init(backend: any KeyringBackend, random: any RandomSource = SystemRandom(), allowWeakKDF: Bool = false) {
        self.backend = backend
        self.random = random
        self.allowWeakKDF = allowWeakKDF
    }

    /// The keyring the command line names (`--keyring PATH` or `secret-service`, `DOTSAFE_KEYRING`,
    /// the default file), following a record that says the keyring is in the Secret Service.
    public convenience init(option: String?, environment: [String: String], random: any RandomSource = SystemRandom()) throws {
        self.init(backend: try KeyringLocation(option: option, environment: environment).backend(environment: environment),
                  random: random, allowWeakKDF: environment["DOTSAFE_ALLOW_WEAK_KDF"] == "1")
    }

    public var exists: Bool { get throws { try backend.load() != nil } }

    /// Adds an item of `count` fresh random bytes. A tag that exists is `duplicateItem`; a
    /// failing random source is `generationFailed`. Nothing is written on either.
    @discardableResult
    public func add(tag: String, count: Int, attributes: [(name: String, value: String)] = []) throws -> [UInt8] {
        try mutation.withLock { _ in
            var items = try backend.load() ?? []
            guard !items.contains(where: { $0.tag == tag }) else { throw KeyringError.duplicateItem(tag) }
            let secret: [UInt8]
            do { secret = try random.bytes(count) } catch { throw KeyringError.generationFailed }
            items.append(KeyringFile.Item(tag: tag, attributes: attributes, secret: secret))
            try backend.save(items)
            return secret
        }
    }

    public func get(tag: String) throws -> KeyringFile.Item? {
        try backend.load()?.first { $0.tag == tag }
    }

    public func delete(tag: String) throws {
        try mutation.withLock { _ in
            var items = try backend.load() ?? []
            guard let index = items.firstIndex(where: { $0.tag == tag }) else { throw KeyringError.itemNotFound(tag) }
            items.remove(at: index)
            try backend.save(items)
        }
    }

    /// The pattern salt and its KDF, checked (R-KEY-5); nil when the keyring has none.
    public func patternSalt() throws -> PatternSalt? {
        guard let item = try get(tag: Self.patternSaltTag) else { return nil }
        let kdf: PatternKDF
        do { kdf = try PatternKDF(attributes: item) } catch {
            switch error {
            case .unknown(let name): throw KeyringError.unknownKDF(name)
            case .invalid(let reason): throw KeyringError.damaged(path: backend.location, reason: reason)
            }
        }
        guard !kdf.isWeak || allowWeakKDF else { throw KeyringError.weakKDF(kdf) }
        guard item.secret.count == Self.saltSize else {
            throw KeyringError.damaged(path: backend.location, reason: "the pattern salt is not \(Self.saltSize) bytes")
        }
        return PatternSalt(salt: item.secret, kdf: kdf)
    }

    /// The pattern salt where a storage needs one to open a vault: no keyring is `missingForStorage`.
    public func requiredPatternSalt() throws -> PatternSalt {
        guard let salt = try patternSalt() else { throw KeyringError.missingForStorage(backend.location) }
        return salt
    }

    /// Makes the pattern salt; weak parameters only with `DOTSAFE_ALLOW_WEAK_KDF=1`.
    @discardableResult
    public func createPatternSalt(kdf: PatternKDF = .standard) throws -> PatternSalt {
        guard !kdf.isWeak || allowWeakKDF else { throw KeyringError.weakKDF(kdf) }
        let salt = try add(tag: Self.patternSaltTag, count: Self.saltSize, attributes: kdf.attributes)
        return PatternSalt(salt: salt, kdf: kdf)
    }

    @discardableResult
    public func createPatternSalt(rounds: Int) throws -> PatternSalt { try createPatternSalt(kdf: .pbkdf2(rounds: rounds)) }

    /// The keyring file sealed under a passphrase (docs/FORMAT.md §8.2).
    public func export(passphrase: [UInt8], rounds: Int = Format.minimumKDFRounds) throws -> [UInt8] {
        guard let items = try backend.load() else { throw KeyringError.missing(backend.place) }
        var plain = KeyringFile(items: items).encode(checksum: SHA256.hash)
        defer { Sealer.wipe(&plain) }
        let salt = try random.bytes(KeyringExport.saltSize)
        let key = try PBKDF2.deriveKey(password: passphrase, salt: salt, rounds: rounds, count: Format.keySize)
        defer { key.wipe() }
        let (nonce, sealed) = try Sealer.seal(plain[...], key: .secret(key), label: Label.sealKeyringExport, context: [], random: random)
        return KeyringExport(rounds: UInt32(rounds), salt: salt, nonce: nonce, sealed: sealed).encode()
    }

    /// Adds the exported items. An item that exists with the same secret is left; one with a
    /// different secret is refused unless `replace`, since that would orphan the vaults made with it.
    /// Returns the tags added or replaced.
    @discardableResult
    public func importExport(_ bytes: [UInt8], passphrase: [UInt8], replace: Bool = false) throws -> [String] {
        guard bytes.starts(with: KeyringExport.magic) else { throw KeyringError.unreadableExport("the file is not a DotSafe keyring export") }
        let export: KeyringExport
        do { export = try KeyringExport.decode(bytes) } catch let error as FormatError {
            throw Self.exportFailure(error)
        }
        guard Int(export.rounds) >= Format.minimumKDFRounds || allowWeakKDF else { throw KeyringError.weakKDF(.pbkdf2(rounds: Int(export.rounds))) }
        let key = try PBKDF2.deriveKey(password: passphrase, salt: export.salt, rounds: Int(export.rounds), count: Format.keySize)
        defer { key.wipe() }
        var plain: [UInt8]
        do {
            plain = try Sealer.open(export.sealed[...], nonce: export.nonce, key: .secret(key), label: Label.sealKeyringExport, context: [])
        } catch { throw KeyringError.wrongPassphrase }
        defer { Sealer.wipe(&plain) }
        let imported: [KeyringFile.Item]
        do { imported = try KeyringFile.decode(plain, checksum: SHA256.hash).items } catch let error as FormatError {
            throw Self.exportFailure(error)
        }
        return try merge(imported, replace: replace)
    }

    /// What `importExport` says of an export that does not decode: FormatError's text names the
    /// structure ("truncated keyring export"), so the subject is the file. A newer version is no damage.
    private static func exportFailure(_ error: FormatError) -> KeyringError {
        if case .newerVersion = error { return .unreadableExport("the file was \(error)") }
        return .unreadableExport("the file is damaged: \(error)")
    }

    /// Adds `imported`: an item that exists with the same secret is left; one with a different
    /// secret is refused unless `replace`. Returns the tags added or replaced.
    func merge(_ imported: [KeyringFile.Item], replace: Bool) throws -> [String] {
        try mutation.withLock { _ in
            var items = try backend.load() ?? []
            var changed: [String] = []
            for item in imported {
                if let index = items.firstIndex(where: { $0.tag == item.tag }) {
                    if items[index].secret == item.secret { continue }
                    guard replace else { throw KeyringError.conflictingItem(item.tag) }
                    items[index] = item
                } else {
                    items.append(item)
                }
                changed.append(item.tag)
            }
            if !changed.isEmpty { try backend.save(items) }
            return changed
        }
    }
}
