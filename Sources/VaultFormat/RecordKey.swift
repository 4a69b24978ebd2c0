/// The key of an index record: `sub` 0 is an item's record, `1 + k` its chunk-map segment k.
public struct RecordKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var itemID: UInt64
    public var sub: UInt32

    public init(itemID: UInt64, sub: UInt32) { self.itemID = itemID; self.sub = sub }

    public static func item(_ id: UInt64) -> RecordKey { RecordKey(itemID: id, sub: 0) }
    public static func segment(_ id: UInt64, _ index: Int) -> RecordKey { RecordKey(itemID: id, sub: UInt32(index + 1)) }

    /// The segment number, or nil for an item record.
    public var segmentIndex: Int? { sub == 0 ? nil : Int(sub - 1) }

    public static func < (a: RecordKey, b: RecordKey) -> Bool { (a.itemID, a.sub) < (b.itemID, b.sub) }
    public var description: String { "\(itemID).\(sub)" }

    /// Bytes a record costs in a page besides its value: key and length prefix.
    public static let overhead = 8 + 4 + 4
}
