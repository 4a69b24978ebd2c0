import DotSafeTestSupport
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat

/// docs/FORMAT.md §10 `keyring.txt` and `keyring-export.txt`, written by
/// tools/vectors/make-vectors.py (hashlib's SHA-256 and PBKDF2, Python `cryptography`'s AES-GCM).
@Suite struct KeyringVectorTests {
    static let keyrings = (try? VectorFile.load("keyring.txt", in: .module)) ?? []

    static func items(_ record: VectorRecord) throws -> [KeyringFile.Item] {
        try (0..<record.int("ITEMS")).map { n in
            let attributes = try record.string("ATTRIBUTES\(n)").split(separator: ";").map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                return (name: parts[0], value: parts[1])
            }
            return KeyringFile.Item(tag: try record.string("TAG\(n)"), attributes: attributes, secret: try record.hex("SECRET\(n)"))
        }
    }

    static func expectSame(_ read: [KeyringFile.Item], _ stated: [KeyringFile.Item], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(read.map(\.tag) == stated.map(\.tag), sourceLocation: sourceLocation)
        #expect(read.map { $0.attributes.map(\.name) } == stated.map { $0.attributes.map(\.name) }, sourceLocation: sourceLocation)
        #expect(read.map { $0.attributes.map(\.value) } == stated.map { $0.attributes.map(\.value) }, sourceLocation: sourceLocation)
        #expect(read.map(\.secret) == stated.map(\.secret), sourceLocation: sourceLocation)
    }

    @Test(arguments: keyrings)
    func keyringFileByteForByteBothWays(record: VectorRecord) throws {
        let stated = try Self.items(record)
        let file = try record.hex("FILE")
        #expect(KeyringFile(items: stated).encode(checksum: SHA256.hash) == file)
        Self.expectSame(try KeyringFile.decode(file, checksum: SHA256.hash).items, stated)
    }

    /// The export opens with the passphrase to the stated keyring file, and `Keyring.export`
    /// makes the same bytes when it draws the vector's salt and nonce.
    @Test func keyringExportByteForByteBothWays() throws {
        let record = try #require(try VectorFile.load("keyring-export.txt", in: .module).first)
        let passphrase = Array(try record.string("PASSPHRASE").utf8), rounds = try record.int("ROUNDS")
        let salt = try record.hex("SALT"), nonce = try record.hex("N"), keyring = try record.hex("KEYRING"), bytes = try record.hex("EXPORT")
        #expect(keyring == (try #require(Self.keyrings.first).hex("FILE")))

        let export = try KeyringExport.decode(bytes)
        #expect(Int(export.rounds) == rounds && export.salt == salt && export.nonce == nonce)
        let key = try PBKDF2.deriveKey(password: passphrase, salt: salt, rounds: rounds, count: Format.keySize)
        #expect(try Sealer.open(export.sealed[...], nonce: nonce, key: .secret(key), seal: .keyringExport) == keyring)
        #expect(export.encode() == bytes)

        let backend = MemoryKeyringBackend(try KeyringFile.decode(keyring, checksum: SHA256.hash).items)
        let made = try Keyring(backend: backend, random: FixedRandom([salt, nonce]), allowWeakKDF: true).export(passphrase: passphrase, rounds: rounds)
        #expect(made == bytes)

        let target = MemoryKeyringBackend()
        let imported = try Keyring(backend: target, allowWeakKDF: true).importExport(bytes, passphrase: passphrase)
        #expect(imported == ["dotsafe.pattern-salt"])
        Self.expectSame(try #require(try target.load()), try Self.items(try #require(Self.keyrings.first)))
    }
}
