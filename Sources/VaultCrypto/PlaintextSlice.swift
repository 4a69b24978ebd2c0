/// Bytes of a read as they sit in the chunk cache, lent rather than copied: a FUSE reply is
/// written to the kernel straight from the cache's locked memory. The slice keeps its buffer
/// alive (and its block unfreed, so unzeroed) until the reply is sent; the cache, seeing the
/// buffer held, gives the chunk a copy before a write or a cut changes it
/// (`ChunkCache.change`), so the bytes lent never change under the reply.
public struct PlaintextSlice: Sendable {
    /// nil: `range.count` zeros (a hole, or past a chunk's stored end).
    private let buffer: PlaintextBuffer?
    private let range: Range<Int>

    /// The stored bytes of `buffer` within `range`: shorter, or empty, past its count.
    public init(_ buffer: PlaintextBuffer, within range: Range<Int>) {
        let end = min(range.upperBound, buffer.count)
        (self.buffer, self.range) = range.lowerBound < end ? (buffer, range.lowerBound..<end) : (nil, 0..<0)
    }

    /// `count` zero bytes.
    public static func zeros(_ count: Int) -> PlaintextSlice { PlaintextSlice(zeros: count) }

    private init(zeros count: Int) {
        precondition(count >= 0 && count <= Self.zeroBytes.count)
        (buffer, range) = (nil, 0..<count)
    }

    private static let zeroBytes = [UInt8](repeating: 0, count: PlaintextPool.largestBlock)

    public var count: Int { range.count }

    /// The bytes where they are: valid only inside `body`.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let buffer else { return try Self.zeroBytes[range].withUnsafeBytes(body) }
        return try buffer.withBytes { try body(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// A copy, in an array the caller owns.
    public var bytes: [UInt8] { withUnsafeBytes { [UInt8]($0) } }
}

extension [PlaintextSlice] {
    /// The slices' bytes one after another, copied into one array.
    public var joined: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(reduce(0) { $0 + $1.count })
        for slice in self { slice.withUnsafeBytes { bytes.append(contentsOf: $0) } }
        return bytes
    }
}
