import DotSafeTestSupport
import Testing
import VaultFormat

/// docs/FORMAT.md §14.1: contact codes, against the vectors of tools/vectors/grants.py (bech32m
/// written there from BIP 173 and BIP 350), and every MUST-reject rule with its one-line message.
@Suite struct ContactCodeTests {
    static let records = (try? VectorFile.load("contact-code.txt", in: .module)) ?? []
    static let codes = records.filter { !$0.isFail }
    static let failures = records.filter(\.isFail)

    @Test func theFileHasItsRecords() {
        #expect(Self.codes.count == 5)
        #expect(Set(Self.failures.compactMap { $0.fields["REASON"] }) == ["prefix", "character", "length", "typo", "type", "padding"])
    }

    @Test(arguments: codes) func encodesAndDecodes(record: VectorRecord) throws {
        let code = ContactCode(publicKey: try record.hex("PUBLIC"))
        #expect(code.text == (try record.string("CODE")))
        #expect(code.compact == (try record.string("COMPACT")))
        #expect(code.compact.count == ContactCode.length)
        #expect(try ContactCode.parse(record.string("CODE")) == code)
        #expect(try ContactCode.parse(record.string("COMPACT")) == code)
        // Upper case, spaces and line breaks instead of dashes: the same code.
        let retyped = try record.string("CODE").uppercased().replacingOccurrences(of: "-", with: " ") + "\n"
        #expect(try ContactCode.parse(retyped) == code)
    }

    /// Each vector that must be refused, refused for its stated reason.
    @Test(arguments: failures) func refusesWhatTheVectorsRefuse(record: VectorRecord) throws {
        let text = try record.string("TEXT")
        do {
            _ = try ContactCode.parse(text)
            Issue.record("accepted \(text)")
        } catch {
            let reason = switch error {
            case .notAContactCode: "prefix"
            case .notACharacter: "character"
            case .wrongLength: "length"
            case .typo: "typo"
            case .newerType, .invalid("code type 0"): "type"
            case .invalid: "padding"
            }
            #expect(reason == (try record.string("REASON")), "\(text): \(error)")
        }
    }

    /// The one-line messages a user sees (the CLI puts `dotsafe: ` in front).
    @Test func eachRefusalSaysWhatIsWrong() throws {
        let alice = try #require(Self.codes.first).string("COMPACT")
        func message(_ text: String) -> String {
            do { _ = try ContactCode.parse(text); return "accepted" } catch { return error.description }
        }
        #expect(message("age1" + alice.dropFirst(8)) == "this is not a DotSafe contact code (a contact code starts with dotsafe1)")
        #expect(message(String(alice.prefix(20)) + "o" + alice.dropFirst(21))
                == "contact code: 'o' (character 21) is not a character of a contact code (letters except b, i, o; digits except 1)")
        #expect(message("dotsafe1-pé") == "contact code: 'é' (character 10) is not a character of a contact code (letters except b, i, o; digits except 1)")
        #expect(message(String(alice.dropLast())) == "a contact code has 67 characters (dotsafe1 and 59 more); this has 66")
        var typo = Array(alice)
        typo[40] = typo[40] == "q" ? "p" : "q"
        #expect(message(String(typo)) == "the contact code has a typo (its checksum does not match): compare it with the one you were given")
        let newer = try #require(Self.failures.first { $0.fields["TEXT"]?.dropFirst(8).first == "z" }).string("TEXT")
        #expect(message(newer) == "the contact code is of a newer kind (type 2); update DotSafe to use it")
        let padding = try #require(Self.failures.first { $0.fields["REASON"] == "padding" }).string("TEXT")
        #expect(message(padding) == "the contact code is not valid: its last character carries bits that must be zero")
    }

    /// Every single-character substitution and every swap of neighbours in a code is caught
    /// (bech32m's guarantee covers up to 4 changed characters).
    @Test func everySingleTypoAndSwapIsCaught() throws {
        let code = Array(try #require(Self.codes.first).string("COMPACT").utf8)
        let alphabet = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
        for position in 8..<code.count {
            for replacement in alphabet where replacement != code[position] {
                var changed = code
                changed[position] = replacement
                #expect(throws: ContactCode.Failure.typo) { try ContactCode.parse(String(decoding: changed, as: UTF8.self)) }
            }
            if position + 1 < code.count, code[position] != code[position + 1] {
                var swapped = code
                swapped.swapAt(position, position + 1)
                #expect(throws: ContactCode.Failure.typo) { try ContactCode.parse(String(decoding: swapped, as: UTF8.self)) }
            }
        }
    }

    /// Changes of 2, 3 and 4 characters at random places (bech32m's guaranteed range): all caught.
    @Test func changesOfUpToFourCharactersAreCaught() throws {
        let code = Array(try #require(Self.codes.last).string("COMPACT").utf8)
        let alphabet = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
        var generator = SystemRandomNumberGenerator()
        for trial in 0..<3000 {
            var changed = code
            for position in (8..<code.count).shuffled(using: &generator).prefix(2 + trial % 3) {
                changed[position] = alphabet.filter { $0 != code[position] }.randomElement(using: &generator)!
            }
            #expect(throws: ContactCode.Failure.typo) { try ContactCode.parse(String(decoding: changed, as: UTF8.self)) }
        }
    }
}
