import Testing
import VaultCrypto
import VaultFormat

/// docs/FORMAT.md §1 and §3: a file name is base32 (RFC 4648, lowercase, unpadded) of 16 bytes.
/// Names decode back to their bytes, and only names of that form are storage names.
@Suite struct FileNameFormatTests {
    /// RFC 4648 §6 decoding, written here so the check does not lean on the encoder.
    static func decode(_ name: String) -> [UInt8]? {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
        var bits = 0, buffer = 0
        var out: [UInt8] = []
        for character in name.utf8 {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            buffer = (buffer << 5) | value
            bits += 5
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> bits))
            }
        }
        return buffer & ((1 << bits) - 1) == 0 ? out : nil
    }

    @Test func namesRoundTrip() throws {
        let random = DeterministicRandom(seed: [UInt8](repeating: 0x42, count: 32))
        var samples = [[UInt8](repeating: 0, count: 16), [UInt8](repeating: 0xff, count: 16), Array(0..<16)]
        for _ in 0..<200 { samples.append(try random.bytes(16)) }
        for raw in samples {
            let name = FileName.encode(raw)
            #expect(name.utf8.count == Format.nameLength)
            #expect(FileName.isWellFormed(name))
            #expect(Self.decode(name) == raw)
        }
    }

    @Test(arguments: [
        ("", "empty"), ("aaaaaaaaaaaaaaaaaaaaaaaaa", "25 characters"), ("aaaaaaaaaaaaaaaaaaaaaaaaaaa", "27 characters"),
        ("Aaaaaaaaaaaaaaaaaaaaaaaaaa", "upper case"), ("aaaaaaaaaaaaaaaaaaaaaaaaa1", "a digit outside the alphabet"),
        ("aaaaaaaaaaaaaaaaaaaaaaaaab", "bits set beyond 128"), ("aaaaaaaaaaaaaaaaaaaaaaaa.a", "a dot"),
        ("aaaaaaaaaaaaaaaaaaaaaaaaa=", "padding"), ("aaaaaaaaaaaaaaaaaaaaaaaaé", "non-ASCII"),
    ])
    func malformedNamesAreNotStorageNames(name: String, why: String) {
        #expect(!FileName.isWellFormed(name), "\(why)")
    }
}
