import CLibCrypto
import Synchronization

/// Many small secrets (e.g. 100,000 per-file 32-byte keys) in shared locked, no-dump pages.
///
/// A `SecretBytes` costs a page and a few system calls; an arena packs keys into 64 KiB chunks of
/// `LockedPages` (2,048 slots of 32 bytes each), so 100,000 keys lock about 3.2 MB, well inside the
/// default 8 MiB RLIMIT_MEMLOCK. Chunks are kept until the arena goes away, so a slot's address
/// never changes.
///
/// Thread safety: the bookkeeping sits behind a `Mutex`; `withBytes` runs its closure *outside*
/// the lock, so that many threads can encrypt with their own keys at once. Freeing (or `wipeAll`)
/// a slot while another thread is still inside `withBytes` for it is a caller bug: the reader then
/// sees the key being zeroed. A slot that has been freed is detected by its generation and traps.
public final class SecretArena: Sendable {
    /// A handle to one secret. Carries a generation, so a handle kept after `free` or `wipeAll`
    /// is recognised as stale instead of silently reading whatever key took its place.
    public struct Slot: Hashable, Sendable {
        fileprivate let index: Int
        fileprivate let generation: UInt32
    }

    /// Size of every secret in this arena, in bytes.
    public let slotSize: Int
    private let slotsPerChunk: Int
    private let chunkByteCount: Int
    private let state: Mutex<State>

    private struct State: ~Copyable {
        var chunks: [LockedPages] = []
        /// Per slot index ever used: odd while allocated, even while free.
        var generations: [UInt32] = []
        var freeIndices: [Int] = []
        /// Indices at or above this have never been allocated since creation or the last `wipeAll`.
        var nextUnused = 0
    }

    public init(slotSize: Int = 32) {
        precondition(slotSize > 0, "SecretArena slot size must be positive")
        self.slotSize = slotSize
        chunkByteCount = LockedPages.roundedToPages(max(slotSize, 64 * 1024))
        slotsPerChunk = chunkByteCount / slotSize
        state = Mutex(State())
    }

    /// Whether every chunk allocated so far is locked in RAM (see `SecretBytes.isLocked`).
    public var isLocked: Bool {
        state.withLock { state in state.chunks.allSatisfy(\.isLocked) }
    }

    /// Number of slots currently allocated.
    public var allocatedCount: Int {
        state.withLock { state in state.generations.reduce(0) { $0 + Int($1 & 1) } }
    }

    /// Copies `bytes` (exactly `slotSize` of them) into a new slot. The caller wipes its array.
    public func allocate(copying bytes: [UInt8]) throws -> Slot {
        guard bytes.count == slotSize else {
            throw CryptoError.invalidKeySize(expected: slotSize, actual: bytes.count)
        }
        let (slot, address) = try reserve()
        bytes.withUnsafeBytes { address.pointer.copyMemory(from: $0.baseAddress!, byteCount: slotSize) }
        return slot
    }

    /// A new slot filled from `random`, without the key passing through an array.
    public func allocateRandom(using random: any RandomSource = SystemRandom()) throws -> Slot {
        let (slot, address) = try reserve()
        do {
            try random.fill(UnsafeMutableRawBufferPointer(start: address.pointer, count: slotSize))
        } catch {
            free(slot)
            throw error
        }
        return slot
    }

    /// Gives `body` the slot's bytes; runs outside the arena's lock (see the type's comment).
    public func withBytes<R>(_ slot: Slot, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let location = state.withLock { state in address(of: slot, in: &state) }
        return try body(UnsafeRawBufferPointer(start: location.pointer, count: slotSize))
    }

    /// Copies a key out, for encoding into something about to be encrypted. The caller wipes it.
    public func bytes(_ slot: Slot) -> [UInt8] {
        withBytes(slot) { [UInt8]($0) }
    }

    /// Zeroes the slot and makes it available again; `slot` is stale from now on.
    public func free(_ slot: Slot) {
        state.withLock { state in
            let location = address(of: slot, in: &state)
            OPENSSL_cleanse(location.pointer, slotSize)
            state.generations[slot.index] &+= 1
            state.freeIndices.append(slot.index)
        }
    }

    /// Zeroes every slot and makes every outstanding handle stale (e.g. when the vault is locked),
    /// so that no caller can go on encrypting with an all-zero key. The pages stay mapped for reuse.
    public func wipeAll() {
        state.withLock { state in
            for chunk in state.chunks { chunk.cleanse() }
            for index in state.generations.indices where state.generations[index] & 1 == 1 {
                state.generations[index] &+= 1
            }
            state.freeIndices.removeAll()
            state.nextUnused = 0
        }
    }

    /// Picks a free index (the most recently freed first), growing by one chunk when full.
    private func reserve() throws -> (Slot, SlotAddress) {
        try state.withLock { state in
            let index: Int
            if let reused = state.freeIndices.popLast() {
                index = reused
            } else {
                index = state.nextUnused
                if index == state.chunks.count * slotsPerChunk {
                    state.chunks.append(try LockedPages(byteCount: chunkByteCount))
                }
                if index == state.generations.count { state.generations.append(0) }
                state.nextUnused += 1
            }
            state.generations[index] &+= 1  // now odd: allocated
            let slot = Slot(index: index, generation: state.generations[index])
            return (slot, address(of: slot, in: &state))
        }
    }

    private func address(of slot: Slot, in state: inout State) -> SlotAddress {
        precondition(slot.index < state.generations.count && state.generations[slot.index] == slot.generation,
                     "SecretArena: slot used after free or wipeAll, or from another arena")
        let chunk = state.chunks[slot.index / slotsPerChunk]
        return SlotAddress(pointer: chunk.base + (slot.index % slotsPerChunk) * slotSize)
    }
}

/// A slot's address carried out of the lock.
/// `@unchecked Sendable` holds because the chunk it points into stays mapped until the arena
/// itself is deinitialised, which cannot happen while one of its methods is running.
private struct SlotAddress: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
}
