/// The body of an index page (docs/FORMAT.md §5.2): records in strictly increasing key order.
public enum IndexPage {
    /// Bytes of page body taken by the record count.
    public static let headerSize = 4

    public static func encode(_ records: [(key: RecordKey, value: [UInt8])]) -> [UInt8] {
        var writer = ByteWriter(capacity: Format.payloadSize)
        writer.u32(UInt32(records.count))
        for record in records {
            writer.u64(record.key.itemID)
            writer.u32(record.key.sub)
            writer.lp32(record.value)
        }
        precondition(writer.bytes.count <= Format.payloadSize, "index page overflow")
        return writer.bytes
    }

    public static func decode(_ body: ArraySlice<UInt8>) throws -> [(key: RecordKey, value: [UInt8])] {
        var reader = ByteReader(body, context: "index page")
        let count = Int(try reader.u32())
        guard count > 0 else { throw FormatError.invalid("empty index page") }
        guard count <= body.count / RecordKey.overhead else { throw FormatError.truncated("index page") }
        var records: [(key: RecordKey, value: [UInt8])] = []
        records.reserveCapacity(count)
        for _ in 0..<count {
            let key = RecordKey(itemID: try reader.u64(), sub: try reader.u32())
            if let previous = records.last?.key, !(previous < key) {
                throw FormatError.invalid("index page: record \(key) out of order")
            }
            records.append((key, try reader.lp32()))
        }
        try reader.expectEnd()
        return records
    }
}
