import Testing
import VaultFormat

/// docs/FORMAT.md §5.2 and §6.2: index pages and chunk-map segments round-trip, and each
/// MUST-reject rule that needs only the page or the segment is refused with its own error (the
/// rules across records and pages are in IndexCheckFormatTests).
@Suite struct IndexPageFormatTests {
    static let records: [(key: RecordKey, value: [UInt8])] = [
        (.item(1), [1, 2, 3]), (.segment(1, 0), []), (.segment(1, 4), [9]), (.item(2), Array(repeating: 7, count: 300)),
    ]

    @Test func pageRoundTrips() throws {
        let body = IndexPage.encode(Self.records)
        #expect(body.count == IndexPage.headerSize + Self.records.reduce(0) { $0 + RecordKey.overhead + $1.value.count })
        let read = try IndexPage.decode(body[...])
        #expect(read.map(\.key) == Self.records.map(\.key))
        #expect(read.map(\.value) == Self.records.map(\.value))
        #expect(read[2].key.segmentIndex == 4 && read[3].key.segmentIndex == nil)
    }

    enum PageRule: String, CaseIterable, Sendable { case emptyPage, keyOutOfOrder, keyTwice, bytesLeftOver, valueCut, countBeyondBody }

    @Test(arguments: PageRule.allCases)
    func pageMustReject(_ rule: PageRule) throws {
        var records = Self.records
        var body: [UInt8]
        let expected: FormatError
        switch rule {
        case .emptyPage: body = IndexPage.encode([]); expected = .invalid("empty index page")
        case .keyOutOfOrder:
            records.swapAt(1, 2); body = IndexPage.encode(records); expected = .invalid("index page: record 1.1 out of order")
        case .keyTwice:
            records[1].key = records[0].key; body = IndexPage.encode(records); expected = .invalid("index page: record 1.0 out of order")
        case .bytesLeftOver: body = IndexPage.encode(records) + [0]; expected = .invalid("index page: 1 bytes left over")
        case .valueCut: body = IndexPage.encode(records).dropLast(); expected = .truncated("index page")
        case .countBeyondBody: body = IndexPage.encode(records); body.replaceSubrange(0..<4, with: le32(100)); expected = .truncated("index page")
        }
        #expect(throws: expected) { try IndexPage.decode(body[...]) }
    }

    static func entry(_ index: Int, _ file: UInt64) -> ChunkSegment.Entry {
        ChunkSegment.Entry(indexInSegment: index, ref: SealedRef(fileNumber: file, nonce: Array(repeating: UInt8(index & 0xff), count: 24)))
    }

    @Test(arguments: [[0], [1023], [0, 1, 2], Array(0..<1024)])
    func segmentRoundTrips(indices: [Int]) throws {
        let entries = indices.map { Self.entry($0, 100 + UInt64($0)) }
        let bytes = ChunkSegment.encode(entries)
        #expect(bytes.count == 2 + entries.count * ChunkSegment.entrySize)
        #expect(try ChunkSegment.decode(bytes) == entries)
    }

    enum SegmentRule: String, CaseIterable, Sendable { case noEntries, tooManyEntries, indexTwice, indexDecreasing, indexBeyondSegment, bytesLeftOver, cut }

    @Test(arguments: SegmentRule.allCases)
    func segmentMustReject(_ rule: SegmentRule) throws {
        let valid = ChunkSegment.encode([Self.entry(3, 20), Self.entry(5, 21)])
        var bytes = valid
        let expected: FormatError
        // An entry's index is at 2 + 34k.
        switch rule {
        case .noEntries: bytes = [0, 0]; expected = .invalid("chunk segment count 0")
        case .tooManyEntries: bytes.replaceSubrange(0..<2, with: [0x01, 0x04]); expected = .invalid("chunk segment count 1025")
        case .indexTwice: bytes.replaceSubrange(36..<38, with: [3, 0]); expected = .invalid("chunk segment index 3")
        case .indexDecreasing: bytes.replaceSubrange(36..<38, with: [2, 0]); expected = .invalid("chunk segment index 2")
        case .indexBeyondSegment: bytes.replaceSubrange(36..<38, with: [0x00, 0x04]); expected = .invalid("chunk segment index 1024")
        case .bytesLeftOver: bytes.append(0); expected = .invalid("chunk segment: 1 bytes left over")
        case .cut: bytes.removeLast(); expected = .truncated("chunk segment")
        }
        #expect(throws: expected) { try ChunkSegment.decode(bytes) }
        #expect(try ChunkSegment.decode(valid).count == 2)
    }
}
