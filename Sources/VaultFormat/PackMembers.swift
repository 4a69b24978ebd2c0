/// The member list of a pack, index version 3 (docs/FORMAT.md §15.4): the items whose member
/// lies in the pack, so that compaction finds them without reading every record.
public struct PackMembers: Equatable, Sendable {
    public var itemIDs: [UInt64]

    public init(_ itemIDs: [UInt64]) { self.itemIDs = itemIDs }

    public func encode() -> [UInt8] {
        precondition(!itemIDs.isEmpty, "a member list holds at least one item")
        var writer = ByteWriter(capacity: itemIDs.count * 8)
        for id in itemIDs { writer.u64(id) }
        return writer.bytes
    }

    /// No count field: the value's length says how many (a multiple of 8, at least 8).
    public static func decode(_ bytes: [UInt8]) throws -> PackMembers {
        guard !bytes.isEmpty, bytes.count % 8 == 0 else { throw FormatError.invalid("pack members: length \(bytes.count)") }
        var reader = ByteReader(bytes, context: "pack members")
        var ids: [UInt64] = []
        ids.reserveCapacity(bytes.count / 8)
        while !reader.isAtEnd {
            let id = try reader.u64()
            guard !IndexKeyV3.isReserved(id) else { throw FormatError.invalid("pack members: \(id) is no item") }
            if let previous = ids.last, previous >= id { throw FormatError.invalid("pack members: items out of order") }
            ids.append(id)
        }
        return PackMembers(ids)
    }
}
