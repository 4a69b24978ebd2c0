import DotSafeTestSupport
import Testing
import VaultCrypto
import VaultFormat

/// docs/FORMAT.md §15.10: every MUST-reject rule of index version 3, one FAIL vector each
/// (tools/vectors/vectors3.py), refused with its own message.
@Suite struct IndexThreeRejectTests {
    static let rootFailures = ((try? VectorFile.load("index-root-v3.txt", in: .module)) ?? []).filter(\.isFail)
    static let pageFailures = ((try? VectorFile.load("index-page-v3.txt", in: .module)) ?? []).filter(\.isFail)

    /// The hash of the colliding pair's records (entry-hash.txt), which the entry vectors use.
    static func pairHash() throws -> UInt32 {
        let records = try VectorFile.load("entry-hash.txt", in: .module)
        return UInt32(try #require(records.first { $0.fields["WHAT"] == "collision, first" }).uint64("HASH"))
    }

    static let rootReasons: [String: FormatError] = [
        "file number": .invalid("index root: next file number \((1 << 44) + 16) above 2^44"),
        "no entry hash key": .invalid("index root: no entry hash key (extension 5)"),
        "entry hash key length": .invalid("index root: extension 5's length"),
    ]

    static func pageReasons(pairHash h: UInt32) -> [String: FormatError] {
        let entriesSub = IndexKeyV3.firstEntriesSub + h
        return [
            "sub": .invalid("index key 2.5000000: no record has sub 5000000"),
            "reserved range": .invalid("index key \(UInt64(4097) << 32).0: reserved range 4097 above 4096"),
            "device": .invalid("index key \(UInt64(1) << 48).0: device 1 is not in the table"),
            "entries under a file": .invalid("index page: record 2.\(entriesSub) under item 2, which is not a folder"),
            "hash": .invalid("folder entries: a name whose hash is not \(h)"),
            "order": .invalid("folder entries: names out of order"),
            "count 0": .invalid("folder entries: count 0"),
            "count 17": .invalid("folder entries: count 17"),
            "summary": .invalid("folder summary: more subfolders than entries"),
            "cover bit": .invalid("file block 0: bit on number 3, not a data file of the device"),
            "bit outside the groups": .invalid("file block 0: bit on number 40, not a data file of the device"),
            "block outside the groups": .invalid("file block 1: bit on number 4100, not a data file of the device"),
            "pack on a clear bit": .invalid("file block: pack 9 on a number not held"),
            "live bytes": .invalid("file block: pack 9 with 141 live bytes of 140"),
            "list order": .invalid("pack members: items out of order"),
            "list length": .invalid("pack members: length 7"),
            "list of no pack": .invalid("index page: member list of 0:3, not a data file of the device"),
        ]
    }

    @Test func everyRuleHasItsVector() throws {
        #expect(Set(Self.rootFailures.compactMap { $0.fields["REASON"] }) == Set(Self.rootReasons.keys))
        #expect(Set(Self.pageFailures.compactMap { $0.fields["REASON"] }) == Set(Self.pageReasons(pairHash: try Self.pairHash()).keys))
    }

    @Test(arguments: rootFailures) func refusesTheRoot(record: VectorRecord) throws {
        let expected = try #require(Self.rootReasons[record.string("REASON")])
        let body = try record.hex("BODY")
        #expect(throws: expected) { try IndexRootV3.decode(body[...]) }
    }

    @Test(arguments: pageFailures) func refusesThePage(record: VectorRecord) throws {
        let expected = try #require(Self.pageReasons(pairHash: try Self.pairHash())[record.string("REASON")])
        let root = try IndexThreeVectorTests.firstRoot(), hash = try IndexThreeVectorTests.entryHash(root)
        let body = try record.hex("BODY")
        // A format-2 page reader takes the bytes: only index 3's rules refuse them.
        _ = try IndexPageV2.decode(body[...], level: 0)
        #expect(throws: expected) { try IndexPageV3.decode(body[...], level: 0, root: root, entryHash: { try hash($0) }) }
    }

    /// Keys of every form go back to themselves; the bounds of each form hold.
    @Test func keyFormsAndTheirBounds() throws {
        let forms: [IndexKeyV3] = [.item(1), .segment(2, index: 0), .segment(2, index: IndexKeyV3.segmentLimit - 1), .folderSummary(1),
                                   .folderEntries(1, hash: 0), .folderEntries(1, hash: (1 << 31) - 1), .fileBlock(device: 1, block: UInt32.max),
                                   .packMembers(device: 1, pack: 0), .packMembers(device: 0, pack: IndexRootV3.fileNumberLimit - 1)]
        for form in forms { #expect(try IndexKeyV3(form.recordKey, deviceCount: 2) == form) }
        #expect(throws: FormatError.invalid("index key 2.\(IndexKeyV3.segmentLimit + 1): no record has sub \(IndexKeyV3.segmentLimit + 1)")) {
            _ = try IndexKeyV3(RecordKey(itemID: 2, sub: UInt32(IndexKeyV3.segmentLimit + 1)), deviceCount: 1)
        }
        #expect(throws: FormatError.invalid("index key 2.\(IndexKeyV3.summarySub + 1): no record has sub \(IndexKeyV3.summarySub + 1)")) {
            _ = try IndexKeyV3(RecordKey(itemID: 2, sub: IndexKeyV3.summarySub + 1), deviceCount: 1)
        }
        // An entry names an item, never item 1 or a reserved ID.
        let hash = try IndexThreeVectorTests.entryHash(IndexThreeVectorTests.firstRoot())
        let name = Array("a".utf8)
        for id in [Format.rootItemID, IndexKeyV3.reservedID(device: 0, z: 1)] {
            let value = FolderEntries([.init(name: name, itemID: id, type: .file)]).encode()
            #expect(throws: FormatError.invalid("folder entries: item \(id) cannot have a name")) {
                try FolderEntries.decode(value, hash: try hash(name), entryHash: { try hash($0) })
            }
        }
        #expect(throws: FormatError.invalid("item name")) {
            try FolderEntries.decode(FolderEntries([.init(name: Array("..".utf8), itemID: 2, type: .file)]).encode(), hash: 0, entryHash: { try hash($0) })
        }
    }
}
