/// One device of a format-2 vault's device table (docs/FORMAT.md §13.4): the files it numbered,
/// the key that names them, and the item IDs it hands out. A vault that never synced has one.
public struct DeviceEntry: Equatable, Sendable {
    public static let idSize = 16

    public var deviceID: [UInt8]
    /// NKd: names this device's files (wiped by the owner once it is in locked memory).
    public var namesKey: [UInt8]
    /// The high half of the item IDs this device makes; 0 only for a vault upgraded from format 1.
    public var itemPrefix: UInt32
    public var nextItemCounter: UInt32
    public var nextFileNumber: UInt64
    public var coverCount: UInt8
    public var ownedGroups: [GroupRange]
    public var releasing: [UInt64]
    /// The `--device` name, UTF-8; kept inside the vault only.
    public var name: [UInt8]

    public init(deviceID: [UInt8], namesKey: [UInt8], itemPrefix: UInt32, nextItemCounter: UInt32, nextFileNumber: UInt64,
                coverCount: UInt8, ownedGroups: [GroupRange], releasing: [UInt64], name: [UInt8]) {
        self.deviceID = deviceID; self.namesKey = namesKey; self.itemPrefix = itemPrefix
        self.nextItemCounter = nextItemCounter; self.nextFileNumber = nextFileNumber; self.coverCount = coverCount
        self.ownedGroups = ownedGroups; self.releasing = releasing; self.name = name
    }

    /// The next item ID this device hands out.
    public var nextItemID: UInt64 { UInt64(itemPrefix) << 32 | UInt64(nextItemCounter) }

    /// File numbers below this are the index slots (device 0 only; the others leave them unused)
    /// and this device's covers.
    public var reservedNumbers: UInt64 { Format.indexSlotCount + UInt64(coverCount) }

    public func owns(_ number: UInt64) -> Bool {
        let group = number / UInt64(Format.groupSize)
        return ownedGroups.contains { $0.first <= group && group < $0.end }
    }

    func encode(into writer: inout ByteWriter) {
        writer.raw(deviceID)
        writer.raw(namesKey)
        writer.u32(itemPrefix)
        writer.u32(nextItemCounter)
        writer.u64(nextFileNumber)
        writer.u8(coverCount)
        writer.u32(UInt32(ownedGroups.count))
        for range in ownedGroups { writer.u64(range.first); writer.u64(range.count) }
        writer.u32(UInt32(releasing.count))
        for number in releasing { writer.u64(number) }
        writer.lp8(name)
    }

    static func decode(from reader: inout ByteReader) throws -> DeviceEntry {
        let deviceID = try reader.raw(idSize), namesKey = try reader.raw(Format.keySize)
        let itemPrefix = try reader.u32(), nextItemCounter = try reader.u32()
        let nextFileNumber = try reader.u64(), coverCount = try reader.u8()
        let groupCount = Int(try reader.u32())
        guard groupCount <= reader.remaining / 16 else { throw FormatError.truncated("device groups") }
        var groups: [GroupRange] = []
        for _ in 0..<groupCount { groups.append(GroupRange(first: try reader.u64(), count: try reader.u64())) }
        let releasingCount = Int(try reader.u32())
        guard releasingCount <= reader.remaining / 8 else { throw FormatError.truncated("device releasing") }
        var releasing: [UInt64] = []
        for _ in 0..<releasingCount { releasing.append(try reader.u64()) }
        let entry = DeviceEntry(deviceID: deviceID, namesKey: namesKey, itemPrefix: itemPrefix, nextItemCounter: nextItemCounter,
                                nextFileNumber: nextFileNumber, coverCount: coverCount, ownedGroups: groups,
                                releasing: releasing, name: try reader.lp8())
        try entry.validate()
        return entry
    }

    /// The MUST-reject rules of §13.4 that need only the entry.
    public func validate() throws {
        guard nextFileNumber % UInt64(Format.groupSize) == 0, nextFileNumber <= FileRef.numberLimit else {
            throw FormatError.invalid("device nextFileNumber")
        }
        guard itemPrefix != 0 || nextItemCounter > UInt32(Format.rootItemID) else { throw FormatError.invalid("device item counter") }
        guard Format.coverRange.contains(Int(coverCount)) else { throw FormatError.invalid("device cover count \(coverCount)") }
        try GroupRange.validate(ownedGroups, below: nextFileNumber, context: "device")
        for number in releasing where owns(number) || number < reservedNumbers || number >= nextFileNumber {
            throw FormatError.invalid("device: releasing file \(number)")
        }
        guard String(validating: name, as: UTF8.self) != nil, !name.contains(0) else { throw FormatError.invalid("device name") }
    }
}
