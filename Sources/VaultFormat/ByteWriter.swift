/// Little-endian encoder for the structures of docs/FORMAT.md.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public mutating func u8(_ value: UInt8) { bytes.append(value) }
    public mutating func u16(_ value: UInt16) { integer(value) }
    public mutating func u32(_ value: UInt32) { integer(value) }
    public mutating func u64(_ value: UInt64) { integer(value) }
    public mutating func i64(_ value: Int64) { integer(value) }
    public mutating func raw(_ value: [UInt8]) { bytes.append(contentsOf: value) }
    public mutating func raw(_ value: ArraySlice<UInt8>) { bytes.append(contentsOf: value) }

    /// `lp8`: a one-byte length, then the bytes. The caller has checked the length fits.
    public mutating func lp8(_ value: [UInt8]) {
        precondition(value.count <= UInt8.max, "lp8 field too long")
        u8(UInt8(value.count)); raw(value)
    }
    public mutating func lp16(_ value: [UInt8]) {
        precondition(value.count <= UInt16.max, "lp16 field too long")
        u16(UInt16(value.count)); raw(value)
    }
    public mutating func lp32(_ value: [UInt8]) {
        precondition(value.count <= UInt32.max, "lp32 field too long")
        u32(UInt32(value.count)); raw(value)
    }

    private mutating func integer<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
}
