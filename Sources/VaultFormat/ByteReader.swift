/// Little-endian decoder over bytes that came from disk: every read is bounds-checked and
/// throws `FormatError.truncated` instead of trapping.
public struct ByteReader: Sendable {
    private let bytes: ArraySlice<UInt8>
    public private(set) var position: Int
    private let context: String

    public init(_ bytes: ArraySlice<UInt8>, context: String) {
        self.bytes = bytes
        self.position = bytes.startIndex
        self.context = context
    }

    public init(_ bytes: [UInt8], context: String) { self.init(bytes[...], context: context) }

    public var remaining: Int { bytes.endIndex - position }
    public var isAtEnd: Bool { remaining == 0 }

    public mutating func u8() throws -> UInt8 { try integer() }
    public mutating func u16() throws -> UInt16 { try integer() }
    public mutating func u32() throws -> UInt32 { try integer() }
    public mutating func u64() throws -> UInt64 { try integer() }
    public mutating func i64() throws -> Int64 { try integer() }

    public mutating func raw(_ count: Int) throws -> [UInt8] { Array(try slice(count)) }

    public mutating func slice(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, count <= remaining else { throw FormatError.truncated(context) }
        defer { position += count }
        return bytes[position..<position + count]
    }

    public mutating func lp8() throws -> [UInt8] { try raw(Int(u8())) }
    public mutating func lp16() throws -> [UInt8] { try raw(Int(u16())) }
    public mutating func lp32() throws -> [UInt8] { try raw(Int(u32())) }

    /// Structures end exactly where their bytes do: leftovers mean a different structure.
    public func expectEnd() throws {
        guard isAtEnd else { throw FormatError.invalid("\(context): \(remaining) bytes left over") }
    }

    private mutating func integer<T: FixedWidthInteger>() throws -> T {
        let size = MemoryLayout<T>.size
        let field = try slice(size)
        var value: T = 0
        for (shift, byte) in field.enumerated() { value |= T(truncatingIfNeeded: byte) << (8 * shift) }
        return value
    }
}
