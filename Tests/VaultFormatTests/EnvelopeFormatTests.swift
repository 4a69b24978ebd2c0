import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat

/// docs/FORMAT.md §4: the inner block round-trips, and each MUST-reject rule of the envelope is
/// refused with its own error. (A nonce other than the recorded one, a failed tag, and the seal's
/// bindings are in SealVectorTests.)
@Suite struct EnvelopeFormatTests {
    static let body = Array("an envelope body".utf8)
    static func padding(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 | 1) } }

    @Test(arguments: [InnerBlock.Kind.indexRoot, .indexPage, .chunk], [0, 16, Format.payloadSize])
    func innerBlockRoundTrips(kind: InnerBlock.Kind, length: Int) throws {
        let body = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let block = InnerBlock.encode(kind: kind, body: body[...], padding: Self.padding)
        #expect(block.count == Format.innerBlockSize)
        #expect(Array(block.prefix(8)) == [1, kind.rawValue, 0, 0] + le32(length))
        #expect(Array(try InnerBlock.decode(block, expecting: kind)) == body)
    }

    enum Rule: String, CaseIterable, Sendable {
        case olderVersion, newerVersion, otherKind, reservedBytes, lengthBeyondPayload, shortBlock
    }

    @Test(arguments: Rule.allCases)
    func innerBlockMustReject(_ rule: Rule) throws {
        var block = InnerBlock.encode(kind: .indexPage, body: Self.body[...], padding: Self.padding)
        let expected: FormatError
        switch rule {
        case .olderVersion: block[0] = 0; expected = .invalid("inner block version 0")
        case .newerVersion: block[0] = 3; expected = .newerVersion(found: 3)
        case .otherKind: block[1] = 3; expected = .invalid("inner block kind 3, expected 2")
        case .reservedBytes: block[3] = 1; expected = .invalid("inner block reserved bytes")
        case .lengthBeyondPayload: block.replaceSubrange(4..<8, with: le32(Format.payloadSize + 1))
            expected = .invalid("inner block length 262145")
        case .shortBlock: block.removeLast(); expected = .truncated("inner block")
        }
        #expect(throws: expected) { try InnerBlock.decode(block, expecting: .indexPage) }
    }

    @Test func newerVersionSaysToUpdate() {
        #expect("\(FormatError.newerVersion(found: 2))" == "made by a newer DotSafe (format version 2); update DotSafe to open it")
    }

    /// A storage file that is not F bytes is refused before any decryption (§3, §4).
    @Test(arguments: [Format.fileSize - 1, Format.fileSize + 1, 0])
    func envelopeOfAnotherSizeIsRefused(size: Int) throws {
        let key = try SecretBytes(copying: [UInt8](repeating: 3, count: 32))
        let (nonce, file) = try Sealer.sealEnvelope(kind: .chunk, body: Self.body[...], key: .secret(key), seal: .chunk(item: 1, index: 0),
                                                    random: DeterministicRandom(seed: [UInt8](repeating: 1, count: 32)))
        var resized = file
        if size < file.count { resized = Array(file.prefix(size)) } else { resized += [0] }
        #expect(throws: CryptoError.authenticationFailed) {
            try Sealer.openEnvelope(resized, expectedNonce: nonce, kind: .chunk, key: .secret(key), seal: .chunk(item: 1, index: 0))
        }
        #expect(try Sealer.openEnvelope(file, expectedNonce: nonce, kind: .chunk, key: .secret(key), seal: .chunk(item: 1, index: 0))
                == Self.body)
    }
}

func le32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
func le64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
