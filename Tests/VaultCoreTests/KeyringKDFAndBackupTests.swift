import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// The scrypt option, recovery codes and moving a keyring, on the keyring's rules (issue 15).
@Suite struct KeyringKDFAndBackupTests {
    static func planted(_ attributes: [(name: String, value: String)]) -> MemoryKeyringBackend {
        let backend = MemoryKeyringBackend()
        backend.items = [KeyringFile.Item(tag: Keyring.patternSaltTag, attributes: attributes, secret: Array(repeating: 7, count: 32))]
        return backend
    }

    @Test func scryptIsRecordedWithItsParameters() throws {
        let backend = MemoryKeyringBackend()
        let salt = try Keyring(backend: backend).createPatternSalt(kdf: .standardScrypt)
        #expect(salt.kdf == .scrypt(n: 65536, r: 8, p: 1))
        let item = try #require(backend.items?.first)
        #expect(item.attribute("kdf") == "scrypt" && item.attribute("N") == "65536" && item.attribute("r") == "8" && item.attribute("p") == "1")
        #expect(try Keyring(backend: backend).patternSalt() == salt)
    }

    @Test func plantedWeakScryptIsRefusedUnlessAllowed() throws {
        let weak = Self.planted([("kdf", "scrypt"), ("N", "1024"), ("r", "8"), ("p", "1")])
        #expect(throws: KeyringError.weakKDF(.scrypt(n: 1024, r: 8, p: 1))) { try Keyring(backend: weak).patternSalt() }
        #expect("\(KeyringError.weakKDF(.scrypt(n: 1024, r: 8, p: 1)))"
                == "the keyring asks for scrypt, N 1024, r 8, p 1 (1 MiB), less than 64 MiB: refused (a planted keyring could weaken your vault)")
        #expect(try Keyring(backend: weak, allowWeakKDF: true).patternSalt()?.kdf == .scrypt(n: 1024, r: 8, p: 1))
        #expect(throws: KeyringError.weakKDF(.scrypt(n: 1024, r: 8, p: 1))) { try Keyring(backend: MemoryKeyringBackend()).createPatternSalt(kdf: .scrypt(n: 1024, r: 8, p: 1)) }
    }

    @Test(arguments: [
        [("kdf", "scrypt"), ("N", "1000"), ("r", "8"), ("p", "1")],         // not a power of two
        [("kdf", "scrypt"), ("N", "1073741824"), ("r", "8"), ("p", "1")],   // 1 TiB: would exhaust memory
        [("kdf", "scrypt"), ("N", "65536"), ("r", "8")],                    // p missing
    ])
    func plantedAbsurdScryptIsDamage(attributes: [(String, String)]) {
        let error = #expect(throws: KeyringError.self) { try Keyring(backend: Self.planted(attributes.map { ($0.0, $0.1) }), allowWeakKDF: true).patternSalt() }
        #expect("\(error!)".hasPrefix("the keyring memory is damaged: "), "\(error!)")
    }

    @Test func scryptAndPBKDF2GiveDifferentKeysAndScryptMatchesOpenSSL() throws {
        let salt = Array(repeating: UInt8(9), count: 32)
        let bytes = Array("b2-c2-d3-d4".utf8)
        let pattern = try SecretBytes(copying: bytes)
        let viaKDF = try PatternKDF.scrypt(n: 1024, r: 8, p: 1).deriveKey(password: pattern, salt: salt).copyBytes()
        let direct = try Scrypt.deriveKey(password: bytes, salt: salt, n: 1024, r: 8, p: 1, count: 32).copyBytes()
        #expect(viaKDF == direct)
        #expect(viaKDF != (try PatternKDF.pbkdf2(rounds: 1000).deriveKey(password: pattern, salt: salt).copyBytes()))
    }

    @Test func recoveryCodeCarriesTheSaltAndItsKDF() throws {
        let source = Keyring(backend: MemoryKeyringBackend(), allowWeakKDF: true)
        let salt = try source.createPatternSalt(kdf: .scrypt(n: 1 << 16, r: 8, p: 1))
        let code = try source.recoveryCode().joined(separator: " ")
        let target = Keyring(backend: MemoryKeyringBackend())
        #expect(try target.importRecoveryCode(code) == true)
        #expect(try target.patternSalt() == salt)
        #expect(try target.importRecoveryCode(code) == false)
        // A different salt is refused unless replaced: vaults made with it would look empty.
        let other = Keyring(backend: MemoryKeyringBackend())
        try other.createPatternSalt()
        #expect(throws: KeyringError.conflictingItem(Keyring.patternSaltTag)) { try other.importRecoveryCode(code) }
        #expect(try other.importRecoveryCode(code, replace: true) == true)
        #expect(try other.patternSalt() == salt)
    }

    @Test func aWeakRecoveryCodeIsRefused() throws {
        let source = Keyring(backend: MemoryKeyringBackend(), allowWeakKDF: true)
        try source.createPatternSalt(rounds: 1000)
        let backend = MemoryKeyringBackend()
        #expect(throws: KeyringError.weakKDF(.pbkdf2(rounds: 1000))) { try Keyring(backend: backend).importRecoveryCode(try source.recoveryCode().joined()) }
        #expect(backend.items == nil)
    }

    @Test func moveWritesChecksThenRemovesAndRefusesADifferentTarget() throws {
        let base = try FileKeyringTests.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let first = FileKeyringBackend(path: base + "/a"), second = FileKeyringBackend(path: base + "/b")
        let salt = try Keyring(backend: first).createPatternSalt()
        try KeyringMove.move(from: first, to: second)
        #expect(!FileManager.default.fileExists(atPath: base + "/a"))
        #expect(try Keyring(backend: second).patternSalt() == salt)
        // A place holding another keyring is never overwritten.
        let third = FileKeyringBackend(path: base + "/c")
        try Keyring(backend: third).createPatternSalt()
        let before = FileManager.default.contents(atPath: base + "/c")
        let error = #expect(throws: KeyringError.self) { try KeyringMove.move(from: second, to: third) }
        #expect("\(error!)" == "\(base)/c already holds a different keyring: moving would lose one of the two salts; nothing was changed")
        #expect(FileManager.default.contents(atPath: base + "/c") == before)
        #expect(try Keyring(backend: second).patternSalt() == salt)
    }

    @Test func aRecordNamingAnUnknownPlaceIsRefusedNotReadAsEmpty() throws {
        let base = try FileKeyringTests.folder()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let file = FileKeyringBackend(path: base + "/keyring")
        let record = KeyringRecord.item(backend: "kwallet-direct")
        try PrivateFile.writeAtomically(file.path, KeyringFile(items: [record]).encode(checksum: SHA256.hash))
        let location = KeyringLocation(option: file.path, environment: [:])
        #expect(throws: KeyringError.unknownBackend(path: file.path, name: "kwallet-direct")) { try location.backend(environment: [:]) }
        // Not even `add` (what init does) may treat the record as an empty keyring.
        #expect(throws: KeyringError.unknownBackend(path: file.path, name: "kwallet-direct")) { try Keyring(backend: file).createPatternSalt() }
    }
}
