import DotSafeTestSupport
import Testing
import VaultFormat

/// docs/FORMAT.md §13.10 `item-record-v2.txt` and `chunk-segment-v2.txt`: record version 2 in
/// every layout (format-1 seals of upgraded items included), and keyed segments, both ways.
@Suite struct FormatTwoRecordVectorTests {
    static let items = (try? VectorFile.load("item-record-v2.txt", in: .module)) ?? []
    static let segments = (try? VectorFile.load("chunk-segment-v2.txt", in: .module)) ?? []

    static func item(_ record: VectorRecord) throws -> ItemRecord {
        let type = try #require(ItemRecord.ItemType(rawValue: UInt8(try record.int("TYPE"))))
        var layout = ItemRecord.Layout.empty
        let member = try record.fields["MEMBER"] == nil ? nil : record.list("MEMBER")[0]
        switch record.fields["LAYOUT"] {
        case "packed":
            let m = try #require(member)
            layout = .packed(.init(file: try FormatTwoVectorTests.fileRef(m[0]), offset: UInt32(m[1])!, sealedLength: UInt32(m[2])!, key: try hexBytes(m[3])))
        case "packed1":
            let m = try #require(member)
            layout = .packed(.init(fileNumber: try FormatTwoVectorTests.fileRef(m[0]).raw, offset: UInt32(m[1])!, sealedLength: UInt32(m[2])!,
                                   nonce: try hexBytes(m[3])))
        case "chunked": layout = .chunked
        case "empty", nil: layout = .empty
        case let other: throw HarnessError("unknown layout \(other!)")
        }
        var item = ItemRecord(type: type, mode: try #require(UInt32(try record.string("MODE"), radix: 8)),
                              uid: UInt32(try record.int("UID")), gid: UInt32(try record.int("GID")), rdev: try record.uint64("RDEV"),
                              atime: Int64(try record.int("ATIME")), mtime: Int64(try record.int("MTIME")), ctime: Int64(try record.int("CTIME")),
                              size: try record.uint64("SIZE"),
                              links: try record.list("LINKS").map { ItemRecord.Link(parentID: UInt64($0[0])!, name: try hexBytes($0[1])) },
                              xattrs: try record.list("XATTRS").map { (name: try hexBytes($0[0]), value: try hexBytes($0[1])) },
                              itemKey: try record.fields["ITK"].map(hexBytes) ?? [], layout: layout,
                              target: try record.fields["TARGET"].map(hexBytes) ?? [])
        item.recordVersion = Format.versionTwo
        item.version = try record.uint64("VERSION")
        item.changedBy = UInt16(try record.int("CHANGEDBY"))
        return item
    }

    @Test func theVectorsCoverEveryLayout() throws {
        let layouts = Set(Self.items.compactMap { $0.fields["LAYOUT"] })
        #expect(layouts == ["empty", "packed", "chunked", "packed1"])
        #expect(Self.items.contains { $0.fields["ITK"] != nil && $0.fields["LAYOUT"] == "chunked" })
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
        let stated = try record.list("ENTRIES").map { entry -> ChunkSegmentV2.Entry in
            let secret = try hexBytes(entry[3])
            return ChunkSegmentV2.Entry(indexInSegment: Int(entry[0])!, file: try FormatTwoVectorTests.fileRef(entry[2]),
                                        seal: entry[1] == "1" ? .formatOne(nonce: secret) : .key(secret))
        }
        let bytes = try record.hex("SEGMENT")
        #expect(ChunkSegmentV2.encode(stated) == bytes)
        #expect(try ChunkSegmentV2.decode(bytes) == stated)
    }
}
