/// One chunk's plaintext in a `PlaintextPool` block: the chunk cache's value type. Bytes past
/// `count` are always zero (blocks come zeroed, a cut is zeroed), so growing needs no fill.
/// Growing past the block moves the bytes to a larger one and frees (zeroes) the old; the
/// block is freed when the last reference to the buffer goes. The only copies out are the
/// arrays that `bytes` returns, which the caller owns; AES reads and writes the block itself
/// (`AESGCM.seal(_:_:_:...)`, `AESGCM.open(...into:)`), so a chunk is decrypted into the cache
/// and sealed from it without a copy in ordinary memory.
///
/// `@unchecked Sendable` so that the vault's state can sit in a `Mutex` and a chunk can be
/// loaded or written behind on another thread: a buffer is filled by one thread before anyone
/// else sees it (a load), and changed only under the vault's lock while nothing else reads it
/// (the chunk store gives a chunk being written behind a copy before it changes it).
public final class PlaintextBuffer: @unchecked Sendable {
    private let pool: PlaintextPool
    private var block: PlaintextPool.Block
    /// Bytes stored (at most one chunk, `PlaintextPool.largestBlock`).
    public private(set) var count = 0

    /// An empty buffer with room for `capacity` bytes.
    public init(pool: PlaintextPool, capacity: Int = 0) {
        self.pool = pool
        block = pool.allocate(atLeast: capacity)
    }

    /// A buffer holding a copy of `bytes`.
    public convenience init(pool: PlaintextPool, copying bytes: [UInt8]) {
        self.init(pool: pool, capacity: bytes.count)
        write(bytes[...], at: 0)
    }

    deinit { pool.free(block) }

    /// The size of its block: what the buffer costs the cache.
    public var capacity: Int { block.size }

    /// For tests: the block, to look at its memory after the buffer is gone.
    public var currentBlock: PlaintextPool.Block { block }

    /// A copy of `range` (within `count`), in an array the caller owns.
    public func bytes(_ range: Range<Int>) -> [UInt8] {
        precondition(range.lowerBound >= 0 && range.upperBound <= count)
        return [UInt8](UnsafeRawBufferPointer(start: block.address + range.lowerBound, count: range.count))
    }

    /// A copy of every byte stored.
    public var allBytes: [UInt8] { bytes(0..<count) }

    /// Writes `source` at `offset`, growing the buffer; a gap past the old end reads as zeros.
    public func write(_ source: ArraySlice<UInt8>, at offset: Int) {
        write(source.span.bytes, at: offset)
    }

    /// The same from any memory: a FUSE write's own buffer, copied once, straight into the block.
    public func write(_ source: RawSpan, at offset: Int) {
        let end = offset + source.byteCount
        reserve(end)
        source.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, raw.count > 0 else { return }
            (block.address + offset).copyMemory(from: base, byteCount: raw.count)
        }
        count = max(count, end)
    }

    /// A new buffer with the same bytes (and block size).
    public func copy() -> PlaintextBuffer {
        let copy = PlaintextBuffer(pool: pool, capacity: block.size)
        copy.block.address.copyMemory(from: block.address, byteCount: count)
        copy.count = count
        return copy
    }

    /// The stored bytes where they are, for the cipher: valid only inside `body`.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(UnsafeRawBufferPointer(start: block.address, count: count)) }
    }

    /// Replaces the contents by `count` bytes that `fill` writes in place (the cipher's
    /// output). If `fill` throws, the buffer is left empty and all zero.
    func overwrite(count newCount: Int, _ fill: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        reserve(newCount)
        do {
            try withExtendedLifetime(self) { try fill(UnsafeMutableRawBufferPointer(start: block.address, count: newCount)) }
        } catch {
            SecureZero.wipe(block.address, count: max(count, newCount))
            count = 0
            throw error
        }
        // Bytes past the new end must stay zero.
        if newCount < count { SecureZero.wipe(block.address + newCount, count: count - newCount) }
        count = newCount
    }

    /// Makes room for `capacity` bytes, moving to a larger block if needed.
    public func reserve(_ capacity: Int) {
        guard capacity > block.size else { return }
        let larger = pool.allocate(atLeast: capacity)
        larger.address.copyMemory(from: block.address, byteCount: count)
        pool.free(block)
        block = larger
    }

    /// Drops the bytes from `newCount` on, zeroing them.
    public func truncate(to newCount: Int) {
        guard newCount < count else { return }
        SecureZero.wipe(block.address + newCount, count: count - newCount)
        count = max(0, newCount)
    }
}
