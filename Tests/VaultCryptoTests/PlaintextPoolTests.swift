import DotSafeTestSupport
import Glibc
import Testing
import VaultCrypto

/// The chunk cache's memory (R-SEC-5): blocks of the right sizes in no-dump regions, locked
/// within the budget, zeroed when freed, moved and zeroed when a buffer grows, all zeroed by
/// `wipeAll`.
@Suite struct PlaintextPoolTests {
    static func allZero(_ bytes: [UInt8]) -> Bool { bytes.allSatisfy { $0 == 0 } }

    @Test func blocksArePowersOfTwoFromFourKiBToOneChunk() {
        #expect(PlaintextPool.blockSize(for: 0) == 4096)
        #expect(PlaintextPool.blockSize(for: 4096) == 4096)
        #expect(PlaintextPool.blockSize(for: 4097) == 8192)
        #expect(PlaintextPool.blockSize(for: 100_000) == 131_072)
        #expect(PlaintextPool.blockSize(for: 262_144) == 262_144)
    }

    @Test func aFreedBlockIsZeroAndItsFrameIsReused() {
        let pool = PlaintextPool(lockBudget: nil)
        var buffer: PlaintextBuffer? = PlaintextBuffer(pool: pool, copying: [UInt8](repeating: 0xA5, count: 200_000))
        let block = buffer!.currentBlock
        #expect(block.size == 262_144)
        #expect(pool.currentBytes(of: block).prefix(200_000).allSatisfy { $0 == 0xA5 })
        buffer = nil
        #expect(Self.allZero(pool.currentBytes(of: block)), "a freed block keeps plaintext")
        #expect(pool.inUseByteCount == 0)
        let mapped = pool.mappedByteCount
        let again = (0..<4).map { _ in PlaintextBuffer(pool: pool, capacity: 262_144) }
        #expect(pool.mappedByteCount == mapped, "four chunks fit the first region again")
        withExtendedLifetime(again) {}
    }

    @Test func growingMovesToALargerBlockAndZeroesTheOld() {
        let pool = PlaintextPool(lockBudget: nil)
        let buffer = PlaintextBuffer(pool: pool, copying: [1, 2, 3])
        let small = buffer.currentBlock
        #expect(small.size == 4096)
        buffer.write([UInt8](repeating: 9, count: 10_000)[...], at: 5000)
        #expect(buffer.currentBlock.size == 16_384)
        #expect(Self.allZero(pool.currentBytes(of: small)), "the old block keeps plaintext")
        #expect(buffer.count == 15_000)
        #expect(buffer.bytes(0..<5) == [1, 2, 3, 0, 0], "a gap reads as zeros")
        buffer.truncate(to: 2)
        #expect(buffer.allBytes == [1, 2])
        #expect(Self.allZero(Array(pool.currentBytes(of: buffer.currentBlock)[2...])), "a cut keeps plaintext")
    }

    @Test func wipeAllZeroesBlocksInUse() {
        let pool = PlaintextPool(lockBudget: nil)
        let buffers = (0..<3).map { PlaintextBuffer(pool: pool, copying: [UInt8](repeating: UInt8($0 + 1), count: 70_000)) }
        pool.wipeAll()
        for buffer in buffers { #expect(Self.allZero(pool.currentBytes(of: buffer.currentBlock))) }
    }

    /// Once more frames are free than the few kept ready, the rest go back to the system (the
    /// daemon shrinks after a large read is evicted); they come back zeroed, no-dump, and locked
    /// again, with their addresses unchanged.
    @Test func freeFramesBeyondTheReadyFewGoBackToTheSystem() throws {
        let pool = PlaintextPool(lockBudget: nil)
        let ready = PlaintextPool.readyFrames, count = ready + 12
        var buffers = (0..<count).map { PlaintextBuffer(pool: pool, copying: [UInt8](repeating: UInt8($0 % 255 + 1), count: 262_144)) }
        let blocks = buffers.map(\.currentBlock)
        #expect(try Self.residentPages(pool) == count * 64)
        buffers.removeAll()
        #expect(pool.releasedByteCount == (count - ready) * 262_144)
        #expect(try Self.residentPages(pool) == ready * 64, "free frames beyond the ready ones stay resident")
        for block in blocks { #expect(Self.allZero(pool.currentBytes(of: block)), "a released frame kept plaintext") }
        #expect(pool.reacquiredByteCount == 0)
        buffers = (0..<count).map { _ in PlaintextBuffer(pool: pool, capacity: 262_144) }
        #expect(pool.mappedByteCount == count * 262_144 && pool.releasedByteCount == 0, "a region was mapped while released frames were free")
        #expect(pool.reacquiredByteCount == (count - ready) * 262_144)
        try pool.withRegionAddresses { regions in
            for region in regions {
                let flags = try vmFlags(containing: region)
                #expect(flags.contains("dd") && (!isRoot || flags.contains("lo")), "\(flags.sorted())")
            }
        }
        withExtendedLifetime(buffers) {}
    }

    /// A quiet daemon gives back the frames it kept ready too; a block in use keeps its bytes and
    /// its pages, and a frame given back comes back zeroed when it is needed again.
    @Test func releasingFreeFramesKeepsOnlyTheBlocksInUse() throws {
        let pool = PlaintextPool(lockBudget: nil)
        let ready = PlaintextPool.readyFrames
        let kept = PlaintextBuffer(pool: pool, copying: [UInt8](repeating: 7, count: 262_144))
        var buffers = (0..<ready).map { PlaintextBuffer(pool: pool, copying: [UInt8](repeating: UInt8($0 % 255 + 1), count: 262_144)) }
        buffers.removeAll()
        #expect(try Self.residentPages(pool) == (ready + 1) * 64, "the ready frames stay until released")
        #expect(pool.releaseFreeFrames() >= ready * 262_144)
        #expect(try Self.residentPages(pool) == 64, "only the block in use stays resident")
        #expect(kept.allBytes == [UInt8](repeating: 7, count: 262_144))
        #expect(pool.releaseFreeFrames() == 0, "nothing left to give back")
        buffers = (0..<ready).map { _ in PlaintextBuffer(pool: pool, capacity: 262_144) }
        #expect(pool.reacquiredByteCount == ready * 262_144)
        for buffer in buffers { #expect(Self.allZero(pool.currentBytes(of: buffer.currentBlock))) }
        withExtendedLifetime((kept, buffers)) {}
    }

    struct MincoreFailed: Error { let errno: Int32 }

    /// Pages of the pool's regions in memory now (mincore).
    static func residentPages(_ pool: PlaintextPool) throws -> Int {
        try pool.withRegionAddresses { regions in
            var vector = [UInt8](repeating: 0, count: PlaintextPool.regionSize / 4096)
            return try regions.reduce(0) { total, region in
                guard mincore(UnsafeMutableRawPointer(mutating: region), PlaintextPool.regionSize, &vector) == 0 else {
                    throw MincoreFailed(errno: errno)
                }
                return total + vector.filter { $0 & 1 == 1 }.count
            }
        }
    }

    /// Every region is excluded from core dumps and wiped in a forked child; the first
    /// `lockBudget` bytes are locked, the rest not (as root, whom no RLIMIT_MEMLOCK holds back).
    @Test func regionsAreNoDumpAndLockedWithinTheBudget() throws {
        let pool = PlaintextPool(lockBudget: 3 << 20)
        let buffers = (0..<20).map { _ in PlaintextBuffer(pool: pool, capacity: 262_144) }
        #expect(pool.mappedByteCount == 5 << 20)
        try pool.withRegionAddresses { regions in
            #expect(regions.count == 5)
            for (index, region) in regions.enumerated() {
                let flags = try vmFlags(containing: region)
                #expect(flags.contains("dd"), "region \(index) is in core dumps: \(flags.sorted())")
                #expect(flags.contains("wf"), "region \(index) is copied into a forked child: \(flags.sorted())")
                if isRoot { #expect(flags.contains("lo") == (index < 3), "region \(index): \(flags.sorted())") }
            }
        }
        if isRoot { #expect(pool.lockedByteCount == 3 << 20) }
        withExtendedLifetime(buffers) {}
    }
}
