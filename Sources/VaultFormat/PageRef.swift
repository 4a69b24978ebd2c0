/// A reference to one index page of a format-2 vault (docs/FORMAT.md §13.5): the first record
/// key the page holds, its file, and the random key it was sealed with. The key is recorded
/// nowhere else, so a page version no parent references can no longer be opened (R-DEL-2).
public struct PageRef: Equatable, Sendable {
    public static let size = 8 + 4 + 8 + Format.keySize

    public var firstKey: RecordKey
    public var file: FileRef
    /// Wiped by the owner once it is in locked memory.
    public var pageKey: [UInt8]

    public init(firstKey: RecordKey, file: FileRef, pageKey: [UInt8]) {
        self.firstKey = firstKey; self.file = file; self.pageKey = pageKey
    }

    func encode(into writer: inout ByteWriter) {
        writer.u64(firstKey.itemID)
        writer.u32(firstKey.sub)
        writer.u64(file.raw)
        writer.raw(pageKey)
    }

    static func decode(from reader: inout ByteReader) throws -> PageRef {
        PageRef(firstKey: RecordKey(itemID: try reader.u64(), sub: try reader.u32()), file: FileRef(raw: try reader.u64()),
                pageKey: try reader.raw(Format.keySize))
    }

    /// `count` refs, each with a first key above the one before.
    static func decodeList(_ count: Int, from reader: inout ByteReader, context: String) throws -> [PageRef] {
        guard count <= reader.remaining / size else { throw FormatError.truncated(context) }
        var refs: [PageRef] = []
        refs.reserveCapacity(count)
        for _ in 0..<count {
            let ref = try decode(from: &reader)
            if let previous = refs.last, !(previous.firstKey < ref.firstKey) {
                throw FormatError.invalid("\(context): page refs out of order")
            }
            refs.append(ref)
        }
        return refs
    }
}
