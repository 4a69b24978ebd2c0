/// Where the bytes of an item lie in its chunks (docs/FORMAT.md §7.1): chunk i holds bytes
/// `[iP, iP + P)`, and chunk-map segment k covers chunks `1024k ..< 1024k + 1024` (§6). Plain
/// arithmetic, the one place it is worked out (gocryptfs keeps its offsets the same way).
public enum ChunkOffsets {
    /// P: the bytes of one chunk.
    public static let chunkSize = Format.payloadSize
    /// Everything the format can address: 2^32 chunks.
    public static let maximumFileSize = UInt64(Format.payloadSize) << 32

    /// The chunk that holds byte `offset`.
    public static func chunkIndex(_ offset: UInt64) -> Int { Int(offset / UInt64(chunkSize)) }

    /// Where byte `offset` lies within its chunk.
    public static func offsetInChunk(_ offset: UInt64) -> Int { Int(offset % UInt64(chunkSize)) }

    /// The first byte of chunk `index`.
    public static func start(ofChunk index: Int) -> UInt64 { UInt64(index) * UInt64(chunkSize) }

    /// Chunks a file of `size` bytes has: ceil(size / P). Written without `size + P - 1`, which
    /// overflows for a size from disk near UInt64.max (a fuzz finding).
    public static func chunkCount(forSize size: UInt64) -> Int {
        let payload = UInt64(chunkSize)
        return Int(size / payload + (size % payload == 0 ? 0 : 1))
    }

    /// The segment record (sub − 1) whose map holds chunk `index`.
    public static func segment(ofChunk index: Int) -> Int { index / Format.chunksPerSegment }

    /// The chunk indexes segment `segment` maps.
    public static func chunks(inSegment segment: Int) -> Range<Int> {
        segment * Format.chunksPerSegment..<(segment + 1) * Format.chunksPerSegment
    }

    /// One chunk's part of a byte range.
    public struct Piece: Equatable, Sendable {
        public var index: Int
        /// The bytes of the chunk the range covers.
        public var range: Range<Int>
        /// Where the piece starts in the whole range (0 for the first).
        public var position: Int

        public init(index: Int, range: Range<Int>, position: Int) { self.index = index; self.range = range; self.position = position }
    }

    /// The pieces of `offset ..< end`, one per chunk, in order; nothing for an empty range.
    public static func pieces(from offset: UInt64, to end: UInt64) -> Pieces { Pieces(offset: offset, end: end) }

    public struct Pieces: Sequence, IteratorProtocol {
        private var offset: UInt64
        private let start: UInt64
        private let end: UInt64

        init(offset: UInt64, end: UInt64) { self.offset = offset; start = offset; self.end = end }

        public mutating func next() -> Piece? {
            guard offset < end else { return nil }
            let within = offsetInChunk(offset)
            let count = Int(Swift.min(UInt64(chunkSize - within), end - offset))
            let piece = Piece(index: chunkIndex(offset), range: within..<within + count, position: Int(offset - start))
            offset += UInt64(count)
            return piece
        }
    }
}
