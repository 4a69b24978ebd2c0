import DotSafeTestSupport
import Glibc
import Testing
import VaultCrypto

@Suite struct SecretArenaTests {
    @Test func storesManyKeysAcrossChunks() throws {
        let arena = SecretArena()
        #expect(arena.slotSize == 32)
        let random = DeterministicRandom(seed: [UInt8](repeating: 9, count: 32))
        var stored: [(SecretArena.Slot, [UInt8])] = []
        for _ in 0..<5000 {  // more than two 64 KiB chunks of 32-byte slots
            let key = try random.bytes(32)
            stored.append((try arena.allocate(copying: key), key))
        }
        #expect(arena.allocatedCount == 5000)
        #expect(Set(stored.map(\.0)).count == 5000)
        for (slot, key) in stored { #expect(arena.bytes(slot) == key) }
        arena.withBytes(stored[4999].0) { #expect($0.count == 32) }
    }

    @Test func wrongSizeIsRejected() {
        let arena = SecretArena(slotSize: 32)
        #expect(throws: CryptoError.invalidKeySize(expected: 32, actual: 16)) {
            try arena.allocate(copying: [UInt8](repeating: 1, count: 16))
        }
        #expect(arena.allocatedCount == 0)
    }

    @Test func freeZeroesTheSlotAndItIsReused() throws {
        let arena = SecretArena(slotSize: 32)
        let keep = try arena.allocate(copying: [UInt8](repeating: 0x11, count: 32))
        let freed = try arena.allocate(copying: [UInt8](repeating: 0xEE, count: 32))
        arena.free(freed)
        #expect(arena.allocatedCount == 1)
        // NoFillRandom leaves the memory as it was, so the new slot shows what free left behind.
        let reused = try arena.allocateRandom(using: NoFillRandom())
        #expect(arena.bytes(reused) == [UInt8](repeating: 0, count: 32))
        #expect(reused != freed, "a stale handle must not equal the new one")
        #expect(arena.bytes(keep) == [UInt8](repeating: 0x11, count: 32))
    }

    @Test func wipeAllZeroesEverything() throws {
        let arena = SecretArena(slotSize: 16)
        for byte in 1...50 { _ = try arena.allocate(copying: [UInt8](repeating: UInt8(byte), count: 16)) }
        arena.wipeAll()
        #expect(arena.allocatedCount == 0)
        for _ in 1...50 {
            let slot = try arena.allocateRandom(using: NoFillRandom())
            #expect(arena.bytes(slot) == [UInt8](repeating: 0, count: 16))
        }
    }

    @Test func staleHandleAfterFreeTraps() async {
        await #expect(processExitsWith: .failure) {
            let arena = SecretArena()
            let slot = try arena.allocateRandom()
            arena.free(slot)
            _ = arena.bytes(slot)
        }
    }

    @Test func staleHandleAfterWipeAllTraps() async {
        await #expect(processExitsWith: .failure) {
            let arena = SecretArena()
            let slot = try arena.allocateRandom()
            arena.wipeAll()
            _ = try arena.allocateRandom()  // same index, new generation
            _ = arena.bytes(slot)
        }
    }

    @Test func allocateRandomUsesTheSourceAndReportsFailure() throws {
        let arena = SecretArena()
        let seed = [UInt8](repeating: 4, count: 32)
        let slot = try arena.allocateRandom(using: DeterministicRandom(seed: seed))
        #expect(arena.bytes(slot) == (try DeterministicRandom(seed: seed).bytes(32)))
        #expect(throws: CryptoError.randomSourceFailed) { try arena.allocateRandom(using: FailingRandom()) }
        #expect(arena.allocatedCount == 1)
    }

    @Test func pagesAreNoDumpWipeOnForkAndLocked() throws {
        let arena = SecretArena()
        let slot = try arena.allocateRandom()
        let flags = try arena.withBytes(slot) { try vmFlags(containing: $0.baseAddress!) }
        #expect(flags.contains("dd") && flags.contains("wf"), "\(flags.sorted())")
        if isRoot {
            #expect(flags.contains("lo"), "\(flags.sorted())")
            #expect(arena.isLocked)
        }
    }

    @Test func concurrentUseKeepsKeysIntact() async throws {
        let arena = SecretArena()
        let survivors = try await withThrowingTaskGroup(of: [(SecretArena.Slot, UInt8)].self) { group in
            for task in 0..<8 {
                group.addTask {
                    var kept: [(SecretArena.Slot, UInt8)] = []
                    for i in 0..<1000 {
                        let value = UInt8(truncatingIfNeeded: task * 31 + i)
                        let slot = try arena.allocate(copying: [UInt8](repeating: value, count: 32))
                        if i % 2 == 0 { arena.free(slot) } else { kept.append((slot, value)) }
                    }
                    return kept
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(survivors.count == 4000)
        #expect(arena.allocatedCount == 4000)
        for (slot, value) in survivors { #expect(arena.bytes(slot) == [UInt8](repeating: value, count: 32)) }
    }
}
