/// What a record key of index version 3 names (docs/FORMAT.md §15.2). Item IDs whose low 32
/// bits are 0 are never items (a device's counter starts at 2, item 1 is the root folder): they
/// carry the per-device records of §15.4, so each device's records are one key range.
public enum IndexKeyV3: Equatable, Sendable {
    case item(UInt64)
    /// Chunk-map segment `index` of a chunked file (sub = 1 + index).
    case segment(UInt64, index: Int)
    case folderSummary(UInt64)
    /// The entries of a folder whose names have hash `hash` (31 bits).
    case folderEntries(UInt64, hash: UInt32)
    /// File block `block` of device `device`: its numbers 4096·block … 4096·block + 4095.
    case fileBlock(device: UInt16, block: UInt32)
    /// The member list of pack file `pack` of device `device`.
    case packMembers(device: UInt16, pack: UInt64)

    /// 2^22 segments of 1,024 chunks of P bytes reach 2^50 bytes, the largest file.
    public static let segmentLimit = 1 << 22
    public static let summarySub: UInt32 = 1 << 30
    public static let firstEntriesSub: UInt32 = 1 << 31
    /// Member-list IDs use z = 1 + (n >> 32) up to this: pack numbers stay below 2^44.
    public static let packRangeLimit: UInt64 = 4096
    public static let numbersPerBlock: UInt64 = 4096

    /// The reserved item ID `R(d, z) = d << 48 | z << 32`.
    public static func reservedID(device: UInt16, z: UInt64) -> UInt64 {
        precondition(z < 1 << 16, "z has 16 bits")
        return UInt64(device) << 48 | z << 32
    }

    public static func isReserved(_ itemID: UInt64) -> Bool { itemID & 0xffff_ffff == 0 }

    /// Reads a key; a key of any other form, or of a device beyond `deviceCount`, MUST be rejected.
    public init(_ key: RecordKey, deviceCount: Int) throws {
        let id = key.itemID, sub = key.sub
        if Self.isReserved(id) {
            let device = UInt16(truncatingIfNeeded: id >> 48), z = (id >> 32) & 0xffff
            guard Int(device) < deviceCount else { throw FormatError.invalid("index key \(key): device \(device) is not in the table") }
            if z == 0 {
                self = .fileBlock(device: device, block: sub)
            } else if z <= Self.packRangeLimit {
                self = .packMembers(device: device, pack: (z - 1) << 32 | UInt64(sub))
            } else {
                throw FormatError.invalid("index key \(key): reserved range \(z) above \(Self.packRangeLimit)")
            }
        } else if sub == 0 {
            self = .item(id)
        } else if Int(sub) <= Self.segmentLimit {
            self = .segment(id, index: Int(sub) - 1)
        } else if sub == Self.summarySub {
            self = .folderSummary(id)
        } else if sub >= Self.firstEntriesSub {
            self = .folderEntries(id, hash: sub - Self.firstEntriesSub)
        } else {
            throw FormatError.invalid("index key \(key): no record has sub \(sub)")
        }
    }

    public var recordKey: RecordKey {
        switch self {
        case .item(let id): RecordKey(itemID: id, sub: 0)
        case .segment(let id, let index): RecordKey(itemID: id, sub: UInt32(index + 1))
        case .folderSummary(let id): RecordKey(itemID: id, sub: Self.summarySub)
        case .folderEntries(let id, let hash): RecordKey(itemID: id, sub: Self.firstEntriesSub + hash)
        case .fileBlock(let device, let block): RecordKey(itemID: Self.reservedID(device: device, z: 0), sub: block)
        case .packMembers(let device, let pack):
            RecordKey(itemID: Self.reservedID(device: device, z: 1 + (pack >> 32)), sub: UInt32(truncatingIfNeeded: pack))
        }
    }
}
