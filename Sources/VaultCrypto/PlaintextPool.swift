import Synchronization

/// Memory for decrypted file contents (the vault's chunk cache), kept the way keys are
/// (R-SEC-5): in `LockedPages` regions of 1 MiB, so every byte is excluded from core dumps
/// (`MADV_DONTDUMP`), wiped in a forked child, and locked in RAM as far as `lockBudget` allows
/// (the rest may be swapped); a block is zeroed (`SecureZero`) the moment it is freed, and
/// every block by `wipeAll`. Swift arrays could give none of this: their storage comes from
/// malloc, moves as it grows and is freed unwiped.
///
/// Blocks are powers of two from 4 KiB to 256 KiB (one chunk), so a 2 KiB file does not hold
/// 256 KiB of the cache. Each 256 KiB frame of a region serves one block size while it has a
/// block in use, and goes back to the free frames when its last block is freed; regions stay
/// mapped until the pool goes, so a block's address never changes. Free frames beyond the few
/// kept ready (`readyFrames`) give their memory back to the system, so that the daemon shrinks
/// once a large read is evicted or its files deleted, instead of staying at its high-water mark.
///
/// Thread safety: the bookkeeping sits behind a `Mutex`; a block's bytes belong to whoever
/// allocated it (`PlaintextBuffer`, under the vault's lock).
public final class PlaintextPool: Sendable {
    /// One block: where it is, how big, and which frame and slot of the frame it takes.
    /// `@unchecked Sendable`: the address stays valid while the pool lives (regions are never
    /// unmapped before), and the block's bytes are its owner's alone.
    public struct Block: @unchecked Sendable {
        let address: UnsafeMutableRawPointer
        let frame: Int
        let slot: Int
        /// Bytes in the block: a power of two from `smallestBlock` to `largestBlock`.
        public let size: Int
        /// For tests: where the block is (to read the VmFlags of its mapping).
        public var location: UnsafeRawPointer { UnsafeRawPointer(address) }
    }

    public static let smallestBlock = 4 << 10
    public static let largestBlock = 256 << 10
    static let framesPerRegion = 4
    /// Free frames kept resident for the next blocks: a stream of chunks that come and go (a
    /// long write, a read through the cache) reuses them without a page fault per page. A
    /// sequential write frees its chunks a group at a time (16, once the group assembled from
    /// them is made: FORMAT.md §3.3) while the next group's chunks take frames: with 8 kept,
    /// every group gave 8 back and took 8 again, an `mlock` that faults 256 KiB in under this
    /// pool's lock and the vault's, 1,769 times per GiB (docs/PERFORMANCE.md). Two groups'
    /// worth covers that; more than the write's peak is never resident, as frames are taken
    /// only when none is free.
    public static let readyFrames = 32
    /// Regions are mapped (and locked, within the budget) whole.
    public static let regionSize = largestBlock * framesPerRegion
    private static let sizeClasses = (largestBlock / smallestBlock).trailingZeroBitCount + 1

    /// Bytes the pool may lock; nil for all of them (no RLIMIT_MEMLOCK applies).
    public let lockBudget: Int?
    private let state: Mutex<State>

    private struct Frame {
        /// Index into the block sizes while the frame serves one; nil while free.
        var sizeClass: Int?
        /// One bit per slot of the frame (at most 64, for 4 KiB blocks): set while free.
        var freeSlots: UInt64 = 0
    }

    private struct State: ~Copyable {
        var regions: [LockedPages] = []
        var frames: [Frame] = []
        /// Free and resident, the most recently freed last.
        var freeFrames: [Int] = []
        /// Free and given back to the system (`LockedPages.release`).
        var releasedFrames: [Int] = []
        /// Frames of each size class with a free slot.
        var partial: [Set<Int>] = Array(repeating: [], count: PlaintextPool.sizeClasses)
        var lockedBytes = 0
        var inUseBytes = 0
        /// Frames taken back after they were given back (each an `mlock` that faults them in).
        var reacquiredFrames = 0
    }

    public init(lockBudget: Int?) {
        self.lockBudget = lockBudget.map { max(0, $0) }
        state = Mutex(State())
    }

    /// Bytes of the pool locked in RAM so far.
    public var lockedByteCount: Int { state.withLock { $0.lockedBytes } }
    /// Bytes mapped so far (regions are mapped as blocks are first needed).
    public var mappedByteCount: Int { state.withLock { $0.regions.count * Self.regionSize } }
    /// Bytes of the blocks in use.
    public var inUseByteCount: Int { state.withLock { $0.inUseBytes } }
    /// Bytes of free frames given back to the system.
    public var releasedByteCount: Int { state.withLock { $0.releasedFrames.count * Self.largestBlock } }
    /// Bytes of frames taken back from the system so far: the churn a stream of chunks causes
    /// when fewer frames are kept ready than it frees at once.
    public var reacquiredByteCount: Int { state.withLock { $0.reacquiredFrames * Self.largestBlock } }

    /// The block size that holds `count` bytes.
    public static func blockSize(for count: Int) -> Int {
        precondition(count <= largestBlock, "a plaintext block holds at most one chunk")
        return max(smallestBlock, 1 << (Int.bitWidth - (max(count, 1) - 1).leadingZeroBitCount))
    }

    /// A zeroed block of at least `count` bytes. Runs out only when the system does (`mmap`
    /// fails), which traps, as a Swift array would.
    public func allocate(atLeast count: Int) -> Block {
        let size = Self.blockSize(for: count)
        let sizeClass = (size / Self.smallestBlock).trailingZeroBitCount
        return state.withLock { state in
            let frame: Int
            if let partial = state.partial[sizeClass].first {
                frame = partial
            } else {
                frame = takeFrame(&state)
                let slots = Self.largestBlock / size
                state.frames[frame] = Frame(sizeClass: sizeClass, freeSlots: slots == 64 ? .max : (1 << slots) - 1)
                state.partial[sizeClass].insert(frame)
            }
            let slot = state.frames[frame].freeSlots.trailingZeroBitCount
            state.frames[frame].freeSlots &= ~(1 << slot)
            if state.frames[frame].freeSlots == 0 { state.partial[sizeClass].remove(frame) }
            state.inUseBytes += size
            let region = state.regions[frame / Self.framesPerRegion]
            let address = region.base + (frame % Self.framesPerRegion) * Self.largestBlock + slot * size
            return Block(address: address, frame: frame, slot: slot, size: size)
        }
    }

    /// Zeroes the block and makes it available again.
    public func free(_ block: Block) {
        SecureZero.wipe(block.address, count: block.size)
        state.withLock { state in
            guard let sizeClass = state.frames[block.frame].sizeClass else { preconditionFailure("block freed twice") }
            state.frames[block.frame].freeSlots |= 1 << block.slot
            state.inUseBytes -= block.size
            let slots = Self.largestBlock / block.size
            if state.frames[block.frame].freeSlots == (slots == 64 ? .max : (1 << slots) - 1) {
                state.frames[block.frame] = Frame()
                state.partial[sizeClass].remove(block.frame)
                state.freeFrames.append(block.frame)
                if state.freeFrames.count > Self.readyFrames { release(state.freeFrames.removeFirst(), &state) }
            } else {
                state.partial[sizeClass].insert(block.frame)
            }
        }
    }

    /// Gives every free frame's memory back to the system, the ready ones too: for a daemon that
    /// has gone quiet, so that it does not sit on what it kept for the next burst. Blocks in use
    /// are untouched. Returns the bytes given back.
    @discardableResult
    public func releaseFreeFrames() -> Int {
        state.withLock { state in
            let count = state.freeFrames.count
            while let frame = state.freeFrames.popLast() { release(frame, &state) }
            return count * Self.largestBlock
        }
    }

    /// Zeroes every region, blocks in use included (the vault is being locked).
    public func wipeAll() {
        state.withLock { state in
            for region in state.regions { region.cleanse() }
        }
    }

    /// For tests: what the memory of `block` holds now, whether it is in use or was freed.
    public func currentBytes(of block: Block) -> [UInt8] {
        withExtendedLifetime(self) { [UInt8](UnsafeRawBufferPointer(start: block.address, count: block.size)) }
    }

    /// For tests: the VmFlags of a region are read at this address.
    public func withRegionAddresses<R>(_ body: ([UnsafeRawPointer]) throws -> R) rethrows -> R {
        let addresses = state.withLock { state in state.regions.map { Address(UnsafeRawPointer($0.base)) } }
        return try withExtendedLifetime(self) { try body(addresses.map(\.pointer)) }
    }

    /// A free frame, mapping (and locking, within the budget) a new region when none is left.
    private func takeFrame(_ state: inout State) -> Int {
        if let frame = state.freeFrames.popLast() { return frame }
        if let frame = state.releasedFrames.popLast() {
            let (region, offset) = place(frame)
            state.regions[region].reacquire(offset: offset, count: Self.largestBlock)
            state.reacquiredFrames += 1
            return frame
        }
        let lockable = lockBudget.map { max(0, $0 - state.lockedBytes) } ?? .max
        let region: LockedPages
        do { region = try LockedPages(byteCount: Self.regionSize, lockLimit: lockable) } catch {
            fatalError("out of memory for the chunk cache: \(error)")
        }
        state.lockedBytes += region.lockedByteCount
        state.regions.append(region)
        let first = state.frames.count
        state.frames += Array(repeating: Frame(), count: Self.framesPerRegion)
        state.freeFrames += (first + 1..<first + Self.framesPerRegion).reversed()
        return first
    }
}

extension PlaintextPool {
    /// The region of a frame and the frame's offset in it.
    private func place(_ frame: Int) -> (region: Int, offset: Int) {
        (frame / Self.framesPerRegion, frame % Self.framesPerRegion * Self.largestBlock)
    }

    private func release(_ frame: Int, _ state: inout State) {
        let (region, offset) = place(frame)
        state.regions[region].release(offset: offset, count: Self.largestBlock)
        state.releasedFrames.append(frame)
    }
}

/// A region's address carried out of the lock, for tests.
private struct Address: @unchecked Sendable {
    let pointer: UnsafeRawPointer
    init(_ pointer: UnsafeRawPointer) { self.pointer = pointer }
}
