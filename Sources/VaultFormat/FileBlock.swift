/// File block k of a device, index version 3 (docs/FORMAT.md §15.4): which of the device's
/// numbers 4096k … 4096k + 4095 the root holds, and the fill of the packs among them, so that a
/// mount finds free files and places members without reading every reference.
public struct FileBlock: Equatable, Sendable {
    public struct Pack: Equatable, Sendable {
        /// The number's place in the block, 0 … 4095.
        public var index: UInt16
        /// The sum of the sealed lengths of the pack's members.
        public var liveBytes: UInt32
        /// The end of its last member (§7.2).
        public var reservedEnd: UInt32
        public init(index: UInt16, liveBytes: UInt32, reservedEnd: UInt32) {
            self.index = index; self.liveBytes = liveBytes; self.reservedEnd = reservedEnd
        }
    }

    public static let numbers = Int(IndexKeyV3.numbersPerBlock)
    public static let heldSize = numbers / 8

    /// Bit `i & 7` (least significant first) of byte `i >> 3` is number 4096k + i.
    public var held: [UInt8]
    public var packs: [Pack]

    public init(held: [UInt8], packs: [Pack]) { self.held = held; self.packs = packs }

    public func isHeld(_ index: Int) -> Bool { held[index >> 3] & (1 << (index & 7)) != 0 }

    /// No bit set and no pack: what releases before 2026-12-05 could leave of a block whose
    /// owned numbers a commit released (`validate`).
    public var isEmpty: Bool { packs.isEmpty && !held.contains { $0 != 0 } }

    public func encode() -> [UInt8] {
        precondition(held.count == Self.heldSize, "512 bytes of held bits")
        var writer = ByteWriter(capacity: Self.heldSize + 2 + packs.count * 10)
        writer.raw(held)
        writer.u16(UInt16(packs.count))
        for pack in packs { writer.u16(pack.index); writer.u32(pack.liveBytes); writer.u32(pack.reservedEnd) }
        return writer.bytes
    }

    /// The record's own rules; `validate(block:of:)` adds those that need the device's entry.
    public static func decode(_ bytes: [UInt8]) throws -> FileBlock {
        var reader = ByteReader(bytes, context: "file block")
        let held = try reader.raw(heldSize)
        let count = Int(try reader.u16())
        guard count <= reader.remaining / 10 else { throw FormatError.truncated("file block") }
        var packs: [Pack] = []
        for _ in 0..<count {
            let pack = Pack(index: try reader.u16(), liveBytes: try reader.u32(), reservedEnd: try reader.u32())
            if let previous = packs.last, previous.index >= pack.index { throw FormatError.invalid("file block: packs out of order") }
            guard Int(pack.index) < numbers else { throw FormatError.invalid("file block: pack \(pack.index) beyond the block") }
            guard pack.liveBytes >= 1, pack.liveBytes <= pack.reservedEnd, Int(pack.reservedEnd) <= Format.fileSize else {
                throw FormatError.invalid("file block: pack \(pack.index) with \(pack.liveBytes) live bytes of \(pack.reservedEnd)")
            }
            packs.append(pack)
        }
        try reader.expectEnd()
        let block = FileBlock(held: held, packs: packs)
        for pack in packs where !block.isHeld(Int(pack.index)) {
            throw FormatError.invalid("file block: pack \(pack.index) on a number not held")
        }
        return block
    }

    /// Bits only on owned numbers that are not slots or covers (those are never referenced by an
    /// index). A writer makes a block exactly where the device owns a number; a reader also takes
    /// an empty block of no owned number, which releases before 2026-12-05 left when a commit
    /// released the last groups of a block, and which the next commit removes (docs/FORMAT.md
    /// §15.4). One with a bit fails here, a pack needs a bit (`decode`).
    public func validate(block: UInt32, of device: DeviceEntry) throws {
        let first = UInt64(block) * IndexKeyV3.numbersPerBlock
        for index in 0..<Self.numbers where isHeld(index) {
            let number = first + UInt64(index)
            guard number >= device.reservedNumbers && device.owns(number) else {
                throw FormatError.invalid("file block \(block): bit on number \(number), not a data file of the device")
            }
        }
    }
}
