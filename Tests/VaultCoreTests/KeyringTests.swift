import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

@Suite struct KeyringTests {
    @Test func addGetDeleteTaggedRandomItems() throws {
        let backend = MemoryKeyringBackend()
        let keyring = Keyring(backend: backend)
        let a = try keyring.add(tag: "a", count: 32)
        let b = try keyring.add(tag: "b", count: 32)
        #expect(a.count == 32 && a != b)
        #expect(try keyring.get(tag: "a")?.secret == a)
        try keyring.delete(tag: "a")
        #expect(try keyring.get(tag: "a") == nil)
        #expect(throws: KeyringError.itemNotFound("a")) { try keyring.delete(tag: "a") }
    }

    @Test func duplicateAddIsItsOwnErrorAndWritesNothing() throws {
        let backend = MemoryKeyringBackend()
        let keyring = Keyring(backend: backend)
        let first = try keyring.add(tag: "salt", count: 32)
        #expect(throws: KeyringError.duplicateItem("salt")) { try keyring.add(tag: "salt", count: 32) }
        #expect(backend.saves == 1)
        #expect(try keyring.get(tag: "salt")?.secret == first)
    }

    @Test func failedGenerationIsItsOwnErrorAndWritesNothing() throws {
        let backend = MemoryKeyringBackend()
        let keyring = Keyring(backend: backend, random: FailingRandom())
        #expect(throws: KeyringError.generationFailed) { try keyring.add(tag: "salt", count: 32) }
        #expect(backend.saves == 0 && backend.items == nil)
    }

    @Test func weakRoundsAreRefusedUnlessAllowed() throws {
        let backend = MemoryKeyringBackend()
        #expect(throws: KeyringError.weakKDF(.pbkdf2(rounds: 1000))) { try Keyring(backend: backend).createPatternSalt(rounds: 1000) }
        try Keyring(backend: backend, allowWeakKDF: true).createPatternSalt(rounds: 1000)
        // A planted keyring with few rounds cannot silently weaken a vault (R-KEY-5).
        #expect(throws: KeyringError.weakKDF(.pbkdf2(rounds: 1000))) { try Keyring(backend: backend).patternSalt() }
        #expect(try Keyring(backend: backend, allowWeakKDF: true).patternSalt()?.kdf == .pbkdf2(rounds: 1000))
    }

    @Test func patternSaltRecordsItsKDF() throws {
        let backend = MemoryKeyringBackend()
        let salt = try Keyring(backend: backend).createPatternSalt()
        #expect(salt.kdf == .pbkdf2(rounds: 600_000) && salt.salt.count == 32)
        let item = try #require(backend.items?.first)
        #expect(item.tag == "dotsafe.pattern-salt")
        #expect(item.attribute("kdf") == "pbkdf2-hmac-sha256" && item.attribute("rounds") == "600000")
    }

    @Test func exportImportCarriesTheSaltToAnotherKeyring() throws {
        let source = Keyring(backend: MemoryKeyringBackend(), allowWeakKDF: true)
        let salt = try source.createPatternSalt(rounds: 1000)
        let export = try source.export(passphrase: Array("a long passphrase".utf8), rounds: 1000)
        let target = Keyring(backend: MemoryKeyringBackend(), allowWeakKDF: true)
        #expect(throws: KeyringError.wrongPassphrase) { try target.importExport(export, passphrase: Array("wrong".utf8)) }
        #expect(try target.importExport(export, passphrase: Array("a long passphrase".utf8)) == ["dotsafe.pattern-salt"])
        #expect(try target.patternSalt() == salt)
        var tampered = export
        tampered[tampered.count - 1] ^= 1
        #expect(throws: KeyringError.wrongPassphrase) { try target.importExport(tampered, passphrase: Array("a long passphrase".utf8)) }
    }

    @Test func importRefusesToReplaceADifferentSalt() throws {
        let source = Keyring(backend: MemoryKeyringBackend(), allowWeakKDF: true)
        try source.createPatternSalt(rounds: 1000)
        let export = try source.export(passphrase: Array("passphrase".utf8), rounds: 1000)
        let targetBackend = MemoryKeyringBackend()
        let target = Keyring(backend: targetBackend, allowWeakKDF: true)
        let own = try target.createPatternSalt(rounds: 1000)
        #expect(throws: KeyringError.conflictingItem("dotsafe.pattern-salt")) {
            try target.importExport(export, passphrase: Array("passphrase".utf8))
        }
        #expect(try target.patternSalt() == own)
        try target.importExport(export, passphrase: Array("passphrase".utf8), replace: true)
        #expect(try target.patternSalt() != own)
    }
}

@Suite struct FileKeyringTests {
    static func folder() throws -> String { try TestFolder.make("keyring") }

    @Test func fileIsPrivateAndReplacedAtomically() throws {
        let base = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let path = base + "/data/dotsafe/keyring"
        let keyring = Keyring(backend: FileKeyringBackend(path: path))
        try keyring.createPatternSalt()
        let file = try FileManager.default.attributesOfItem(atPath: path)
        let folder = try FileManager.default.attributesOfItem(atPath: base + "/data/dotsafe")
        #expect((file[.posixPermissions] as? Int) == 0o600)
        #expect((folder[.posixPermissions] as? Int) == 0o700)
        try keyring.add(tag: "other", count: 16)
        #expect(try FileManager.default.contentsOfDirectory(atPath: base + "/data/dotsafe") == ["keyring"])
        #expect(try Keyring(backend: FileKeyringBackend(path: path)).patternSalt() == keyring.patternSalt())
    }

    @Test func openPermissionsAreRefusedWithAClearMessage() throws {
        let base = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let path = base + "/keyring"
        try Keyring(backend: FileKeyringBackend(path: path)).createPatternSalt()
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        chmod(path, 0o640)
        let error = #expect(throws: KeyringError.self) { try Keyring(backend: FileKeyringBackend(path: path)).patternSalt() }
        #expect("\(error!)".contains("can be read or written by others (mode 640)"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func damagedFileIsReportedNotTreatedAsEmpty() throws {
        let base = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let path = base + "/keyring"
        try Keyring(backend: FileKeyringBackend(path: path)).createPatternSalt()
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[40] ^= 0x10
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        let error = #expect(throws: KeyringError.self) { try Keyring(backend: FileKeyringBackend(path: path)).patternSalt() }
        #expect("\(error!)".contains("is damaged: invalid keyring checksum"))
    }

    @Test func pathPrecedence() {
        let env = ["HOME": "/home/u", "XDG_DATA_HOME": "/x", "DOTSAFE_KEYRING": "/e/k"]
        #expect(FileKeyringBackend.path(option: "/o/k", environment: env) == "/o/k")
        #expect(FileKeyringBackend.path(option: nil, environment: env) == "/e/k")
        #expect(FileKeyringBackend.path(option: nil, environment: ["HOME": "/home/u", "XDG_DATA_HOME": "/x"]) == "/x/dotsafe/keyring")
        #expect(FileKeyringBackend.path(option: nil, environment: ["HOME": "/home/u"]) == "/home/u/.local/share/dotsafe/keyring")
    }
}
