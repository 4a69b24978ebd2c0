import Foundation

public struct HexError: Error, CustomStringConvertible {
    public let text: String
    public var description: String { "not hex: \(text)" }
}

/// Bytes from hex digits (either case), as the vector files write them.
public func hexBytes(_ text: String) throws -> [UInt8] {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { throw HexError(text: text) }
    func nibble(_ c: UInt8) throws -> UInt8 {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: throw HexError(text: text)
        }
    }
    return try stride(from: 0, to: digits.count, by: 2).map { try nibble(digits[$0]) << 4 | nibble(digits[$0 + 1]) }
}

extension Array where Element == UInt8 {
    /// Lowercase hex, as the vector files write bytes.
    public var hex: String { map { String(format: "%02x", $0) }.joined() }
}
