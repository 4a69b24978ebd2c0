import DotSafeTestSupport
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat

/// docs/FORMAT.md §10 `index-root.txt` and `index-page.txt`, written by tools/vectors/make-vectors.py
/// from the layouts of FORMAT.md alone: Swift must make the same bytes from the stated fields, and
/// read the stated fields back from the bytes.
@Suite struct IndexVectorTests {
    static let roots = (try? VectorFile.load("index-root.txt", in: .module)) ?? []

    static func root(_ record: VectorRecord) throws -> IndexRoot {
        IndexRoot(generation: try record.uint64("GENERATION"), vaultKey: try record.hex("VK"),
                  nextFileNumber: try record.uint64("NEXTFILENUMBER"), nextItemID: try record.uint64("NEXTITEMID"),
                  coverCount: UInt8(try record.int("COVERCOUNT")),
                  ownedGroups: try record.list("GROUPS", separator: "+").map { GroupRange(first: UInt64($0[0])!, count: UInt64($0[1])!) },
                  releasing: try record.list("RELEASING").map { UInt64($0[0])! },
                  pages: try record.list("PAGES").map { SealedRef(fileNumber: UInt64($0[0])!, nonce: try hexBytes($0[1])) })
    }

    @Test func theFilesHaveTheirRecords() throws {
        #expect(Self.roots.count == 2)
        #expect(try VectorFile.load("index-page.txt", in: .module).count == 1)
    }

    @Test(arguments: roots)
    func rootBodyByteForByteBothWays(record: VectorRecord) throws {
        let stated = try Self.root(record)
        let body = try record.hex("BODY")
        #expect(stated.encode() == body)
        let read = try IndexRoot.decode(body[...])
        #expect(read.generation == stated.generation)
        #expect(read.vaultKey == stated.vaultKey)
        #expect(read.nextFileNumber == stated.nextFileNumber)
        #expect(read.nextItemID == stated.nextItemID)
        #expect(read.coverCount == stated.coverCount)
        #expect(read.ownedGroups == stated.ownedGroups)
        #expect(read.releasing == stated.releasing)
        #expect(read.pages == stated.pages)
    }

    /// The slot file: the root's seal binds the index key, its label and the slot number.
    @Test(arguments: roots)
    func slotFileByteForByte(record: VectorRecord) throws {
        let body = try record.hex("BODY"), nonce = try record.hex("SEALN")
        let slot = try record.int("SLOT")
        #expect(UInt64(slot) == (try record.uint64("GENERATION")) % 2)
        let keys = try #require(try VectorFile.load("keys.txt", in: .module).first)
        #expect(try record.hex("IK") == keys.hex("IK"), "the slot is sealed with keys.txt record 0's IK")
        let key = try SecretBytes(copying: try record.hex("IK"))
        let padding = try DeterministicRandom(seed: try record.hex("PADDINGSEED")).bytes(Format.payloadSize - body.count)
        let random = FixedRandom([padding, nonce])
        let (sealedNonce, file) = try Sealer.sealEnvelope(kind: .indexRoot, body: body[...], key: .secret(key),
                                                          seal: .indexRoot(slot: UInt64(slot)), random: random)
        #expect(random.isExhausted)
        #expect(sealedNonce == nonce)
        #expect(file.count == Format.fileSize)
        #expect(sha256(file) == (try record.hex("SLOTSHA256")))
        let opened = try Sealer.openEnvelope(file, expectedNonce: nonce, kind: .indexRoot, key: .secret(key),
                                             seal: .indexRoot(slot: UInt64(slot)))
        #expect(opened == body)
        #expect(throws: CryptoError.authenticationFailed) {
            try Sealer.openEnvelope(file, expectedNonce: nonce, kind: .indexRoot, key: .secret(key),
                                    seal: .indexRoot(slot: UInt64(1 - slot)))
        }
    }

    @Test func pageBodyByteForByteBothWays() throws {
        let record = try #require(try VectorFile.load("index-page.txt", in: .module).first)
        let stated: [(key: RecordKey, value: [UInt8])] = try (0..<record.int("RECORDS")).map { n in
            let key = try record.string("KEY\(n)").split(separator: ".")
            return (RecordKey(itemID: UInt64(key[0])!, sub: UInt32(key[1])!), try record.hex("VALUE\(n)"))
        }
        let body = try record.hex("BODY")
        #expect(IndexPage.encode(stated) == body)
        let read = try IndexPage.decode(body[...])
        #expect(read.map(\.key) == stated.map(\.key))
        #expect(read.map(\.value) == stated.map(\.value))
        // Every value decodes as what its key says it is (§5.2).
        for (key, value) in read {
            if key.segmentIndex == nil { _ = try ItemRecord.decode(value) } else { _ = try ChunkSegment.decode(value) }
        }
        #expect(Set(read.map { $0.key.sub == 0 }) == [true, false], "the page holds item records and segments")
    }
}
