import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultFormat

@Suite struct RecoveryCodeTests {
    /// The vectors of make-vectors.py, a second implementation (docs/FORMAT.md §8.3).
    @Test func vectorsEncodeAndDecode() throws {
        let records = try VectorFile.load("recovery-code.txt", in: .module)
        #expect(records.count == 2)
        for record in records {
            let kdf = try record.hex("KDF")
            let rounds = UInt32(kdf[1]) | UInt32(kdf[2]) << 8 | UInt32(kdf[3]) << 16 | UInt32(kdf[4]) << 24
            let parameters: RecoveryCode.KDF = kdf[0] == 1 ? .pbkdf2(rounds: rounds) : .scrypt(log2N: kdf[1], r: kdf[2], p: kdf[3])
            let code = RecoveryCode(kdf: parameters, salt: try record.hex("SALT"))
            let groups = try record.string("GROUPS")
            #expect(code.encode(hash: sha256).joined(separator: " ") == groups, "\(record)")
            #expect(try RecoveryCode.decode(groups, hash: sha256) == code)
        }
        let first = try RecoveryCode.decode(try records[0].string("GROUPS"), hash: sha256)
        #expect(first.kdf == .pbkdf2(rounds: 600_000))
        #expect(try RecoveryCode.decode(try records[1].string("GROUPS"), hash: sha256).kdf == .scrypt(log2N: 16, r: 8, p: 1))
    }

    static let code = RecoveryCode(kdf: .pbkdf2(rounds: 600_000), salt: Array(0..<32))
    static var groups: [String] { code.encode(hash: sha256) }

    @Test func readsWhatAPersonTypes() throws {
        // Upper case, dashes, line breaks and extra spaces are all fine.
        let typed = Self.groups.map { $0.uppercased() }.joined(separator: "-") .replacingOccurrences(of: "-A", with: "\n  a")
        #expect(try RecoveryCode.decode(typed, hash: sha256) == Self.code)
    }

    @Test(arguments: [0, 6, 16]) func aTypoNamesItsGroup(group: Int) {
        var groups = Self.groups
        var characters = Array(groups[group])
        let original = characters[1]
        // Every other character in the same place: the group's check catches 31 of 32; the
        // whole-code check catches the rest, so the code is never accepted with the typo.
        for replacement in "abcdefghijklmnopqrstuvwxyz234567" where replacement != original {
            characters[1] = replacement
            groups[group] = String(characters)
            do {
                _ = try RecoveryCode.decode(groups.joined(separator: " "), hash: sha256)
                Issue.record("a typo in group \(group + 1) was accepted")
            } catch {
                #expect(error == .typo(groups: [group + 1]) || error == .wholeCode, "\(error)")
            }
        }
        groups = Self.groups
        groups[group] = String(Array(groups[group]).dropLast()) + (groups[group].last == "a" ? "b" : "a")
        #expect(throws: RecoveryCode.Failure.typo(groups: [group + 1])) { try RecoveryCode.decode(groups.joined(separator: " "), hash: sha256) }
        #expect(RecoveryCode.Failure.typo(groups: [group + 1]).description
                == "group \(group + 1) has a typo (its check character does not match): compare it with your paper")
    }

    @Test func swappedGroupsAndBadInputAreNamed() {
        var groups = Self.groups
        groups.swapAt(3, 4)
        #expect(throws: RecoveryCode.Failure.typo(groups: [4, 5])) { try RecoveryCode.decode(groups.joined(separator: " "), hash: sha256) }
        #expect(throws: RecoveryCode.Failure.wrongLength(characters: 80)) {
            try RecoveryCode.decode(Self.groups.dropLast().joined(separator: " "), hash: sha256)
        }
        #expect(throws: RecoveryCode.Failure.notACharacter(group: 2, character: "0")) {
            try RecoveryCode.decode("aea42 ajy0", hash: sha256)
        }
        #expect(RecoveryCode.Failure.wrongLength(characters: 80).description
                == "a recovery code has 17 groups of 5 characters (85); this has 80")
    }

    /// A code for any 38 bytes, with valid checks, to show what decoding refuses.
    static func code(body: [UInt8]) -> String {
        let characters = RecoveryCode.base32(body + sha256(RecoveryCode.codeLabel + body).prefix(4))
        return (0..<RecoveryCode.groupCount).map { index in
            let data = Array(characters[index * 4 ..< index * 4 + 4])
            return String(decoding: data + [RecoveryCode.check(group: index + 1, data, hash: sha256)], as: UTF8.self)
        }.joined(separator: " ")
    }

    @Test func newerVersionsUnknownKDFsAndReservedBytesAreRefused() throws {
        let salt = [UInt8](repeating: 1, count: 32)
        #expect(try RecoveryCode.decode(Self.code(body: [1, 2, 16, 8, 1, 0] + salt), hash: sha256).kdf == .scrypt(log2N: 16, r: 8, p: 1))
        #expect(throws: RecoveryCode.Failure.newerVersion(2)) { try RecoveryCode.decode(Self.code(body: [2, 1, 0, 0, 0, 0] + salt), hash: sha256) }
        #expect(throws: RecoveryCode.Failure.invalid("unknown key derivation 9")) { try RecoveryCode.decode(Self.code(body: [1, 9, 0, 0, 0, 0] + salt), hash: sha256) }
        #expect(throws: RecoveryCode.Failure.invalid("reserved byte")) { try RecoveryCode.decode(Self.code(body: [1, 2, 16, 8, 1, 7] + salt), hash: sha256) }
        // Non-zero padding bits in the last character, with every check recomputed to match.
        var characters = Array(RecoveryCode.base32([1, 1, 0, 0, 0, 0] + salt + sha256(RecoveryCode.codeLabel + [1, 1, 0, 0, 0, 0] + salt).prefix(4)))
        characters[67] = RecoveryCode.alphabet[(RecoveryCode.alphabet.firstIndex(of: characters[67])! | 1)]
        let padded = (0..<17).map { index in
            let data = Array(characters[index * 4 ..< index * 4 + 4])
            return String(decoding: data + [RecoveryCode.check(group: index + 1, data, hash: sha256)], as: UTF8.self)
        }.joined(separator: " ")
        #expect(throws: RecoveryCode.Failure.wholeCode) { try RecoveryCode.decode(padded, hash: sha256) }
    }
}
