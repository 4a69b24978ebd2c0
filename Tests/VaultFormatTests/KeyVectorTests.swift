import DotSafeTestSupport
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat

/// docs/FORMAT.md §10 `keys.txt`: the pattern bytes, the key schedule and the file names, as
/// computed by tools/vectors/make-vectors.py (a second implementation in Python).
@Suite struct KeyVectorTests {
    static let records = (try? VectorFile.load("keys.txt", in: .module)) ?? []

    @Test func theVectorFileHasItsRecords() {
        #expect(Self.records.count == 2)
    }

    @Test(arguments: records)
    func patternBytesKeysAndNames(record: VectorRecord) throws {
        let pattern = try Pattern(parsing: try record.string("INPUT"))
        #expect(pattern.canonical == (try record.string("PATTERN")))
        #expect(pattern.canonicalBytes == (try record.hex("PATTERNBYTES")))

        let salt = try record.hex("SALT"), rounds = try record.int("ROUNDS")
        let patternKey = try PBKDF2.deriveKey(password: pattern.canonicalBytes, salt: salt, rounds: rounds, count: Format.keySize)
        #expect(patternKey.copyBytes() == (try record.hex("PK")))

        let secrets = try VaultSecrets(pattern: pattern, salt: salt, rounds: rounds)
        #expect(secrets.locator.copyBytes() == (try record.hex("LOC")))
        #expect(secrets.indexKey.copyBytes() == (try record.hex("IK")))
        #expect(secrets.namesKey.copyBytes() == (try record.hex("NK")))
        for number in 0..<4 {
            let name = try secrets.fileName(UInt64(number))
            #expect(name == (try record.string("NAME\(number)")), "name(\(number))")
            #expect(FileName.isWellFormed(name))
        }
        #expect(try secrets.indexName(slot: 0) == (try record.string("NAME0")))
        #expect(try secrets.indexName(slot: 1) == (try record.string("NAME1")))
    }

    /// The pattern key is wiped once the three keys exist (R-KEY-2), and the names do not
    /// depend on which entry point made the secrets.
    @Test(arguments: records)
    func secretsFromAPatternKeyWipeIt(record: VectorRecord) throws {
        let patternKey = try SecretBytes(copying: try record.hex("PK"))
        let secrets = try VaultSecrets(patternKey: patternKey)
        #expect(patternKey.copyBytes() == [UInt8](repeating: 0, count: 32))
        #expect(try secrets.fileName(3) == (try record.string("NAME3")))
    }

    /// A name is base32 of 16 bytes: 26 characters whose last one carries 3 bits (RFC 4648, §1).
    @Test func fileNameEncodingFollowsRFC4648() {
        #expect(FileName.encode([UInt8](repeating: 0, count: 16)) == String(repeating: "a", count: 26))
        #expect(FileName.encode([UInt8](repeating: 0xff, count: 16)) == String(repeating: "7", count: 25) + "4")
        // RFC 4648 §10 test string "foobar", padded to 16 bytes with zeros: "MZXW6YTBOI" then zeros.
        let foobar = Array("foobar".utf8) + [UInt8](repeating: 0, count: 10)
        #expect(FileName.encode(foobar) == "mzxw6ytboi" + String(repeating: "a", count: 16))
        #expect(!FileName.isWellFormed(String(repeating: "7", count: 26)), "the last character's low 2 bits must be zero")
        #expect(!FileName.isWellFormed(String(repeating: "a", count: 25)))
        #expect(!FileName.isWellFormed(String(repeating: "A", count: 26)))
    }
}
