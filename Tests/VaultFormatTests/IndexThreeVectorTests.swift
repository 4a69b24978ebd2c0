import DotSafeTestSupport
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat

/// docs/FORMAT.md §15.10: the entry hash, roots and pages of index version 3, written by
/// tools/vectors/make-vectors.py (vectors3.py) from FORMAT.md alone. No release writes them yet.
@Suite struct IndexThreeVectorTests {
    static let hashes = (try? VectorFile.load("entry-hash.txt", in: .module)) ?? []
    static let roots = ((try? VectorFile.load("index-root-v3.txt", in: .module)) ?? []).filter { !$0.isFail }
    static let pages = ((try? VectorFile.load("index-page-v3.txt", in: .module)) ?? []).filter { !$0.isFail }

    /// Root 0 of index-root-v3.txt, under which the pages are read.
    static func firstRoot() throws -> IndexRootV3 {
        try IndexRootV3(FormatTwoVectorTests.root(try #require(roots.first)))
    }

    static func entryHash(_ root: IndexRootV3) throws -> EntryHash {
        try EntryHash(key: SecretBytes(copying: root.entryHashKey))
    }

    static func seal(_ key: [UInt8], kind: InnerBlock.Kind, body: [UInt8], record: VectorRecord, nonce: String, seal: SealContext) throws -> [UInt8] {
        let padding = try DeterministicRandom(seed: record.hex("PADDINGSEED")).bytes(Format.payloadSize - body.count)
        let random = FixedRandom([padding, try record.hex(nonce)])
        let (_, file) = try Sealer.sealEnvelope(kind: kind, version: IndexRootV3.envelopeVersion, body: body[...],
                                                key: .secret(try SecretBytes(copying: key)), seal: seal, random: random)
        #expect(random.isExhausted)
        return file
    }

    @Test func theFilesHaveTheirRecords() {
        #expect(Self.hashes.count == 6)
        #expect(Self.roots.count == 2)
        #expect(Self.pages.count == 2)
    }

    @Test(arguments: hashes) func entryHashOfEachName(record: VectorRecord) throws {
        let hash = try EntryHash(key: SecretBytes(copying: record.hex("EHK")))
        #expect(try hash(record.hex("NAME")) == UInt32(record.uint64("HASH")))
        #expect(try hash(record.hex("NAME")) < 1 << 31)
    }

    /// The generator's first pair of one hash: a second implementation agrees on both names.
    @Test func theCollidingPairHasOneHash() throws {
        let pair = Self.hashes.filter { $0.fields["WHAT"]?.hasPrefix("collision") == true }
        #expect(pair.count == 2)
        let hash = try EntryHash(key: SecretBytes(copying: pair[0].hex("EHK")))
        #expect(try hash(pair[0].hex("NAME")) == hash(pair[1].hex("NAME")))
        #expect(try pair[0].hex("NAME") != pair[1].hex("NAME"))
    }

    @Test(arguments: roots) func rootBodyAndBothSlotsByteForByte(record: VectorRecord) throws {
        let stated = try IndexRootV3(FormatTwoVectorTests.root(record))
        let body = try record.hex("BODY")
        #expect(stated.encode() == body)
        #expect(try IndexRootV3.decode(body[...]) == stated)
        #expect(stated.entryHashKey == (0..<32).map { UInt8($0) })
        // A format-2 reader refuses the body too: tag 5 is the format's own, below 1024.
        #expect(throws: FormatError.invalid("index root: extension 5 is unknown (made by a newer DotSafe?)")) {
            try IndexRootV2.decode(body[...])
        }
        let slot = UInt64(try record.int("SLOT")), rk = try record.hex("RK")
        let original = try Self.seal(rk, kind: .indexRoot, body: body, record: record, nonce: "SEALN", seal: .indexRootV2(slot: slot))
        #expect(sha256(original) == (try record.hex("SLOTSHA256")))
        let copy = try Self.seal(rk, kind: .indexRoot, body: body, record: record, nonce: "COPYN", seal: .indexRootV2(slot: 1 - slot))
        #expect(sha256(copy) == (try record.hex("COPYSHA256")))
        // This release stops at the envelope's version, after the tag verified (§15.1).
        let key = try SecretBytes(copying: rk)
        #expect(throws: FormatError.newerVersion(found: 3)) {
            try Sealer.openEnvelope(original, expectedNonce: nil, kind: .indexRoot, version: Format.versionTwo, key: .secret(key),
                                    seal: .indexRootV2(slot: slot))
        }
        #expect(throws: CryptoError.authenticationFailed) {
            try Sealer.openEnvelope(original, expectedNonce: nil, kind: .indexRoot, version: Format.versionTwo, key: .secret(key),
                                    seal: .indexRootV2(slot: 1 - slot))
        }
    }

    @Test(arguments: pages) func pageBodyAndFileByteForByte(record: VectorRecord) throws {
        let root = try Self.firstRoot(), hash = try Self.entryHash(root)
        let level = UInt8(try record.int("LEVEL")), body = try record.hex("BODY")
        let node = try FormatTwoVectorTests.node(record)
        #expect(IndexPageV3.encode(level: level, node) == body)
        switch (try IndexPageV3.decode(body[...], level: level, root: root, entryHash: { try hash($0) }), node) {
        case (.leaf(let read), .leaf(let stated)):
            #expect(read.map(\.key) == stated.map(\.key) && read.map(\.value) == stated.map(\.value))
            try checkLeafRecords(read, root: root, hash: hash)
        case (.interior(let read), .interior(let stated)): #expect(read == stated)
        default: Issue.record("page decoded at another level")
        }
        let file = try Self.seal(record.hex("PAGEKEY"), kind: .indexPage, body: body, record: record, nonce: "SEALN",
                                 seal: .indexPageV2(level: level))
        #expect(sha256(file) == (try record.hex("FILESHA256")))
        #expect(throws: FormatError.newerVersion(found: 3)) {
            try Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexPage, version: Format.versionTwo,
                                    key: .secret(try SecretBytes(copying: record.hex("PAGEKEY"))), seal: .indexPageV2(level: level))
        }
    }

    /// The leaf's records as the comment of index-page-v3.txt states them, each encoding back.
    func checkLeafRecords(_ records: [(key: RecordKey, value: [UInt8])], root: IndexRootV3, hash: EntryHash) throws {
        let pair = try Self.hashes.filter { $0.fields["WHAT"]?.hasPrefix("collision") == true }.map { try $0.hex("NAME") }
        var kinds: [String] = []
        for (key, value) in records {
            switch try IndexPageV3.decodeRecord(key, value, root: root, entryHash: { try hash($0) }) {
            case .fileBlock(let block):
                #expect(try IndexKeyV3(key, deviceCount: 1) == .fileBlock(device: 0, block: 0))
                #expect((0..<FileBlock.numbers).filter(block.isHeld) == [7, 8, 9, 10])
                #expect(block.packs == [FileBlock.Pack(index: 9, liveBytes: 140, reservedEnd: 140)])
                #expect(block.encode() == value)
                kinds.append("block")
            case .item(let item): kinds.append("item \(key.itemID) \(item.type)")
            case .folderSummary(let summary):
                #expect(summary == FolderSummary(entryCount: 2, subfolderCount: 0) && summary.encode() == value)
                kinds.append("summary")
            case .folderEntries(let entries):
                #expect(entries.entries == [.init(name: pair[0], itemID: 2, type: .file), .init(name: pair[1], itemID: 3, type: .file)])
                #expect(key.sub == IndexKeyV3.firstEntriesSub + (try hash(pair[0])) && entries.encode() == value)
                kinds.append("entries")
            case .segment: kinds.append("segment")
            case .packMembers(let members):
                #expect(try IndexKeyV3(key, deviceCount: 1) == .packMembers(device: 0, pack: 9))
                #expect(members == PackMembers([3]) && members.encode() == value)
                kinds.append("members")
            }
            #expect(try IndexKeyV3(key, deviceCount: 1).recordKey == key)
        }
        #expect(kinds == ["block", "item 1 folder", "summary", "entries", "item 2 file", "segment", "item 3 file", "members"])
    }
}
