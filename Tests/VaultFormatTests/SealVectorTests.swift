import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat

/// docs/FORMAT.md §10 `seal.txt`: one chunk envelope sealed with a fixed item key, nonce and
/// content, computed by tools/vectors/make-vectors.py with Python's `cryptography`.
@Suite struct SealVectorTests {
    struct Vector {
        var itemKey: [UInt8], itemID: UInt64, chunkIndex: UInt64, nonce: [UInt8], body: [UInt8], paddingSeed: [UInt8]
        var fileSize: Int, fileSHA256: [UInt8], head: [UInt8], tail: [UInt8]

        init() throws {
            let record = try #require(try VectorFile.load("seal.txt").first)
            itemKey = try record.hex("ITK")
            itemID = UInt64(try record.int("ITEMID"))
            chunkIndex = UInt64(try record.int("CHUNKINDEX"))
            nonce = try record.hex("N")
            body = try record.hex("BODY")
            paddingSeed = try record.hex("PADDINGSEED")
            fileSize = try record.int("FILESIZE")
            fileSHA256 = try record.hex("FILESHA256")
            head = try record.hex("HEAD")
            tail = try record.hex("TAIL")
        }

        var context: [UInt8] { SealContext.chunk(item: itemID, index: Int(chunkIndex)).context }
        var padding: [UInt8] { get throws { try DeterministicRandom(seed: paddingSeed).bytes(Format.payloadSize - body.count) } }
    }

    /// The engine's own sealing path draws the padding, then the nonce: a scripted random source
    /// hands it the vector's, so the file must come out byte for byte.
    @Test func sealerReproducesTheChunkFile() throws {
        let vector = try Vector()
        #expect(vector.body == Array("DotSafe chunk vector\n".utf8))
        let random = FixedRandom([try vector.padding, vector.nonce])
        let key = try SecretBytes(copying: vector.itemKey)
        let (nonce, file) = try Sealer.sealEnvelope(kind: .chunk, body: vector.body[...], key: .secret(key),
                                                    seal: SealContext(label: Label.sealChunk, context: vector.context), random: random)
        #expect(random.isExhausted)
        #expect(nonce == vector.nonce)
        #expect(file.count == vector.fileSize)
        #expect(file.count == Format.fileSize)
        #expect(Array(file.prefix(64)) == vector.head)
        #expect(Array(file.suffix(64)) == vector.tail)
        #expect(sha256(file) == vector.fileSHA256)

        // And it opens again, only with the recorded nonce, key, label and context.
        let body = try Sealer.openEnvelope(file, expectedNonce: vector.nonce, kind: .chunk, key: .secret(key),
                                           seal: SealContext(label: Label.sealChunk, context: vector.context))
        #expect(body == vector.body)
    }

    enum Mismatch: String, CaseIterable { case nonce, itemID, chunkIndex, label, kind, key, bitFlip }

    /// Each thing the seal binds (R-BLK-2, R-SEC-1) makes the file fail to open when it differs.
    @Test(arguments: Mismatch.allCases)
    func openFailsOnAnyMismatch(_ mismatch: Mismatch) throws {
        let vector = try Vector()
        let key = try SecretBytes(copying: vector.itemKey)
        let (_, sealed) = try Sealer.sealEnvelope(kind: .chunk, body: vector.body[...], key: .secret(key),
                                                  seal: SealContext(label: Label.sealChunk, context: vector.context), random: FixedRandom([try vector.padding, vector.nonce]))
        var file = sealed
        var expectedNonce = vector.nonce, context = vector.context, label = Label.sealChunk
        var kind = InnerBlock.Kind.chunk
        var openKey = key
        switch mismatch {
        case .nonce: expectedNonce[0] ^= 1
        case .itemID: context = SealContext.chunk(item: vector.itemID + 1, index: Int(vector.chunkIndex)).context
        case .chunkIndex: context = SealContext.chunk(item: vector.itemID, index: Int(vector.chunkIndex) + 1).context
        case .label: label = Label.sealMember
        case .kind: kind = .indexPage
        case .key: openKey = try SecretBytes(copying: vector.itemKey.map { $0 ^ 0x80 })
        case .bitFlip: file[Format.fileSize / 2] ^= 0x10
        }
        if mismatch == .kind {
            #expect(throws: FormatError.invalid("inner block kind 3, expected 2")) {
                try Sealer.openEnvelope(file, expectedNonce: expectedNonce, kind: kind, key: .secret(openKey),
                                       seal: SealContext(label: label, context: context))
            }
        } else {
            #expect(throws: CryptoError.authenticationFailed) {
                try Sealer.openEnvelope(file, expectedNonce: expectedNonce, kind: kind, key: .secret(openKey),
                                       seal: SealContext(label: label, context: context))
            }
        }
    }
}
