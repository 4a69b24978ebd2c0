import DotSafeTestSupport
import Testing
import VaultFormat

/// docs/FORMAT.md §10 `item-record.txt` and `chunk-segment.txt`, written by
/// tools/vectors/make-vectors.py from the layouts of FORMAT.md alone: every type and layout of an
/// item record, and segments, byte for byte both ways.
@Suite struct RecordVectorTests {
    static let items = (try? VectorFile.load("item-record.txt", in: .module)) ?? []
    static let segments = (try? VectorFile.load("chunk-segment.txt", in: .module)) ?? []

    static func item(_ record: VectorRecord) throws -> ItemRecord {
        let type = try #require(ItemRecord.ItemType(rawValue: UInt8(try record.int("TYPE"))))
        let layout: ItemRecord.Layout
        switch record.fields["LAYOUT"] {
        case "packed":
            let member = try record.list("MEMBER")[0]
            layout = .packed(ItemRecord.Member(fileNumber: UInt64(member[0])!, offset: UInt32(member[1])!,
                                               sealedLength: UInt32(member[2])!, nonce: try hexBytes(member[3])))
        case "chunked": layout = .chunked
        case "empty", nil: layout = .empty
        case let other: throw HarnessError("unknown layout \(other!)")
        }
        return ItemRecord(type: type, mode: try #require(UInt32(try record.string("MODE"), radix: 8)),
                          uid: UInt32(try record.int("UID")), gid: UInt32(try record.int("GID")), rdev: try record.uint64("RDEV"),
                          atime: Int64(try record.int("ATIME")), mtime: Int64(try record.int("MTIME")), ctime: Int64(try record.int("CTIME")),
                          size: try record.uint64("SIZE"),
                          links: try record.list("LINKS").map { ItemRecord.Link(parentID: UInt64($0[0])!, name: try hexBytes($0[1])) },
                          xattrs: try record.list("XATTRS").map { (name: try hexBytes($0[0]), value: try hexBytes($0[1])) },
                          itemKey: try record.fields["ITK"].map(hexBytes) ?? [], layout: layout,
                          target: try record.fields["TARGET"].map(hexBytes) ?? [])
    }

    @Test func theVectorsCoverEveryTypeAndLayout() throws {
        let records = try Self.items.map(Self.item)
        #expect(Set(records.map(\.type.rawValue)) == Set(1...7))
        #expect(Set(records.filter { $0.type == .file }.map { "\($0.layout)".prefix(6) }) == ["empty", "packed", "chunke"])
        #expect(records.contains { $0.atime < 0 }, "a time before 1970")
        #expect(Self.segments.count == 2)
    }

    @Test(arguments: items)
    func itemRecordByteForByteBothWays(record: VectorRecord) throws {
        let stated = try Self.item(record)
        let bytes = try record.hex("RECORD"), what = try record.string("WHAT")
        #expect(stated.encode() == bytes, "\(what)")
        #expect(try ItemRecord.decode(bytes) == stated, "\(what)")
    }

    @Test(arguments: segments)
    func segmentByteForByteBothWays(record: VectorRecord) throws {
        let stated = try record.list("ENTRIES").map {
            ChunkSegment.Entry(indexInSegment: Int($0[0])!, ref: SealedRef(fileNumber: UInt64($0[1])!, nonce: try hexBytes($0[2])))
        }
        let bytes = try record.hex("SEGMENT")
        #expect(ChunkSegment.encode(stated) == bytes)
        #expect(try ChunkSegment.decode(bytes) == stated)
    }
}
