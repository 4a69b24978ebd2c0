import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultCrypto
import VaultFormat

/// docs/FORMAT.md §8: the keyring file and the keyring export round-trip, and each MUST-reject
/// rule is refused with its own error.
@Suite struct KeyringFormatTests {
    static let items = [
        KeyringFile.Item(tag: "dotsafe.pattern-salt", attributes: [("kdf", "pbkdf2-hmac-sha256"), ("rounds", "600000")],
                         secret: Array(repeating: 0x5a, count: 32)),
        KeyringFile.Item(tag: "other", attributes: [], secret: Array(repeating: 1, count: KeyringFile.maxSecretSize)),
    ]

    /// Bytes of the keyring content (without its checksum), checksummed again after a change.
    static func file(_ change: (inout [UInt8]) -> Void = { _ in }) -> [UInt8] {
        var content = Array(KeyringFile(items: items).encode(checksum: SHA256.hash).dropLast(KeyringFile.checksumSize))
        change(&content)
        return content + SHA256.hash(content)
    }

    @Test func keyringRoundTrips() throws {
        let read = try KeyringFile.decode(Self.file(), checksum: SHA256.hash).items
        #expect(read.map(\.tag) == Self.items.map(\.tag))
        #expect(read.map(\.secret) == Self.items.map(\.secret))
        #expect(read[0].attribute("rounds") == "600000" && read[0].attribute("kdf") == "pbkdf2-hmac-sha256")
        #expect(read[1].attributes.isEmpty)
    }

    enum Rule: String, CaseIterable, Sendable {
        case badChecksum, notAKeyring, newerVersion, olderVersion, tagTwice, emptyTag, tagNotUTF8, emptySecret, secretTooLarge
        case bytesLeftOver, tooShort, itemsCut
    }

    // The first item's tag starts at 11 (magic, version, count), its length byte first.
    @Test(arguments: Rule.allCases)
    func keyringMustReject(_ rule: Rule) throws {
        var bytes = Self.file()
        let expected: FormatError
        switch rule {
        case .badChecksum: bytes[20] ^= 1; expected = .invalid("keyring checksum: the file is damaged")
        case .notAKeyring: bytes = Self.file { $0[0] = 0x64 }; expected = .invalid("keyring: not a DotSafe keyring")
        case .newerVersion: bytes = Self.file { $0[8] = 2 }; expected = .newerVersion(found: 2)
        case .olderVersion: bytes = Self.file { $0[8] = 0 }; expected = .invalid("keyring version 0")
        case .tagTwice: bytes = KeyringFile(items: [Self.items[0], Self.items[0]]).encode(checksum: SHA256.hash)
            expected = .invalid("keyring tag 'dotsafe.pattern-salt'")
        case .emptyTag: bytes = KeyringFile(items: [.init(tag: "", attributes: [], secret: [1])]).encode(checksum: SHA256.hash)
            expected = .invalid("keyring tag ''")
        case .tagNotUTF8: bytes = Self.file { $0[12] = 0xff }; expected = .invalid("keyring tag: not UTF-8")
        case .emptySecret: bytes = KeyringFile(items: [.init(tag: "t", attributes: [], secret: [])]).encode(checksum: SHA256.hash)
            expected = .invalid("keyring secret size")
        case .secretTooLarge:
            bytes = KeyringFile(items: [.init(tag: "t", attributes: [], secret: Array(repeating: 0, count: KeyringFile.maxSecretSize + 1))])
                .encode(checksum: SHA256.hash)
            expected = .invalid("keyring secret size")
        case .bytesLeftOver: bytes = Self.file { $0.append(0) }; expected = .invalid("keyring: 1 bytes left over")
        case .tooShort: bytes = Array(bytes.prefix(40)); expected = .truncated("keyring")
        case .itemsCut: bytes = Self.file { $0.removeLast() }; expected = .truncated("keyring")
        }
        #expect(throws: expected) { try KeyringFile.decode(bytes, checksum: SHA256.hash) }
    }

    /// The rules a keyring's reader adds to the layout (§8.1): a known KDF, at least 600,000 rounds.
    @Test(arguments: [("argon2id", "600000", KeyringError.unknownKDF("argon2id")), ("pbkdf2-hmac-sha256", "599999", .weakKDF(.pbkdf2(rounds: 599_999)))])
    func patternSaltMustReject(kdf: String, rounds: String, expected: KeyringError) throws {
        let folder = try TestFolder.make("keyring")
        defer { TestFolder.remove(folder) }
        let path = folder + "/keyring"
        let item = KeyringFile.Item(tag: "dotsafe.pattern-salt", attributes: [("kdf", kdf), ("rounds", rounds)], secret: Array(repeating: 1, count: 32))
        try FileKeyringBackend(path: path).save([item])
        #expect(throws: expected) { try Keyring(backend: FileKeyringBackend(path: path)).patternSalt() }
    }

    static let export = KeyringExport(rounds: 600_000, salt: Array(repeating: 2, count: 32), nonce: Array(repeating: 3, count: 24),
                                      sealed: Array(repeating: 4, count: 17))

    @Test func exportRoundTrips() throws {
        let read = try KeyringExport.decode(Self.export.encode())
        #expect(read.rounds == 600_000 && read.salt == Self.export.salt && read.nonce == Self.export.nonce && read.sealed == Self.export.sealed)
    }

    enum ExportRule: String, CaseIterable, Sendable { case notAnExport, newerVersion, olderVersion, nothingSealed, cut }

    @Test(arguments: ExportRule.allCases)
    func exportMustReject(_ rule: ExportRule) throws {
        var bytes = Self.export.encode()
        let expected: FormatError
        switch rule {
        case .notAnExport: bytes[7] = 0x58; expected = .invalid("not a DotSafe keyring export")
        case .newerVersion: bytes[8] = 2; expected = .newerVersion(found: 2)
        case .olderVersion: bytes[8] = 0; expected = .invalid("keyring export version 0")
        case .nothingSealed: bytes.removeLast(); expected = .truncated("keyring export")
        case .cut: bytes = Array(bytes.prefix(50)); expected = .truncated("keyring export")
        }
        #expect(throws: expected) { try KeyringExport.decode(bytes) }
    }
}
