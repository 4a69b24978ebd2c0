/// A file of a format-2 vault (docs/FORMAT.md §13.4): the index of the device that numbered it
/// in the top 16 bits, its file number on that device in the low 48. Two devices name their files
/// with their own keys, so they never pick the same storage name.
public struct FileRef: Hashable, Comparable, Sendable, CustomStringConvertible {
    public static let numberBits = 48
    public static let numberLimit: UInt64 = 1 << 48

    public let raw: UInt64

    public init(raw: UInt64) { self.raw = raw }

    public init(device: UInt16, number: UInt64) {
        precondition(number < Self.numberLimit, "file numbers have 48 bits")
        raw = UInt64(device) << UInt64(Self.numberBits) | number
    }

    public var device: UInt16 { UInt16(truncatingIfNeeded: raw >> UInt64(Self.numberBits)) }
    public var number: UInt64 { raw & (Self.numberLimit - 1) }

    public static func < (a: FileRef, b: FileRef) -> Bool { a.raw < b.raw }
    public var description: String { "\(device):\(number)" }
}
