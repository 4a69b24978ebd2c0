/// The body of a format-2 index page (docs/FORMAT.md §13.6): a level, then records (level 0,
/// a leaf) or references to the pages of the level below (an interior page).
public enum IndexPageV2 {
    public enum Node: Sendable {
        case leaf([(key: RecordKey, value: [UInt8])])
        case interior([PageRef])
    }

    /// Bytes of page body taken by the level and the count.
    public static let headerSize = 5

    public static func encode(level: UInt8, _ node: Node) -> [UInt8] {
        var writer = ByteWriter(capacity: Format.payloadSize)
        writer.u8(level)
        switch node {
        case .leaf(let records):
            precondition(level == 0, "leaves are level 0")
            writer.u32(UInt32(records.count))
            for record in records { writer.u64(record.key.itemID); writer.u32(record.key.sub); writer.lp32(record.value) }
        case .interior(let refs):
            precondition(level > 0, "interior pages are above level 0")
            writer.u32(UInt32(refs.count))
            for ref in refs { ref.encode(into: &writer) }
        }
        precondition(writer.bytes.count <= Format.payloadSize, "index page overflow")
        return writer.bytes
    }

    /// Decodes a page its parent expects at `level` (the seal binds the level too).
    public static func decode(_ body: ArraySlice<UInt8>, level expected: UInt8) throws -> Node {
        var reader = ByteReader(body, context: "index page")
        let level = try reader.u8()
        guard level == expected else { throw FormatError.invalid("index page level \(level), expected \(expected)") }
        let count = Int(try reader.u32())
        guard count > 0 else { throw FormatError.invalid("empty index page") }
        if level > 0 {
            let refs = try PageRef.decodeList(count, from: &reader, context: "index page")
            try reader.expectEnd()
            return .interior(refs)
        }
        guard count <= body.count / RecordKey.overhead else { throw FormatError.truncated("index page") }
        var records: [(key: RecordKey, value: [UInt8])] = []
        records.reserveCapacity(count)
        for _ in 0..<count {
            let key = RecordKey(itemID: try reader.u64(), sub: try reader.u32())
            if let previous = records.last?.key, !(previous < key) { throw FormatError.invalid("index page: record \(key) out of order") }
            records.append((key, try reader.lp32()))
        }
        try reader.expectEnd()
        return .leaf(records)
    }
}
