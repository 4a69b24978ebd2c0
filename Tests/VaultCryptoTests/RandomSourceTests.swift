import DotSafeTestSupport
import Testing
import VaultCrypto

@Suite struct RandomSourceTests {
    @Test func systemRandomFillsAndDiffers() throws {
        let random = SystemRandom()
        let a = try random.bytes(32), b = try random.bytes(32)
        #expect(a.count == 32 && a != b)
        #expect(try random.bytes(0) == [])
        // Larger than one getrandom call is guaranteed to return: exercises the short-read loop.
        let big = try random.bytes(1 << 20)
        #expect(big.count == 1 << 20)
        #expect(Set(big.suffix(4096)).count > 200, "tail of a large request was not filled")
        #expect(throws: CryptoError.self) { try random.bytes(-1) }
    }

    @Test func systemRandomBulkRequestsAreFreshStreams() throws {
        let random = SystemRandom()
        // Both sides of the threshold, and two bulk requests: a reused key or counter would repeat blocks.
        for count in [SystemRandom.bulkThreshold - 1, SystemRandom.bulkThreshold, 1 << 18] {
            let a = try random.bytes(count), b = try random.bytes(count)
            #expect(a != b && a.count == count)
            let blocks = stride(from: 0, to: count - 15, by: 16).flatMap { [Array(a[$0..<$0 + 16]), Array(b[$0..<$0 + 16])] }
            #expect(Set(blocks).count == blocks.count, "a 16-byte block repeats in \(count)-byte requests")
            // Each byte value appears about count/256 times (a loose bound: a stuck or zeroed stream fails it).
            var histogram = [Int](repeating: 0, count: 256)
            for byte in a { histogram[Int(byte)] += 1 }
            #expect(histogram.max()! < max(40, count / 256 * 2), "byte values of a \(count)-byte request are skewed")
        }
    }

    @Test func deterministicRandomMatchesCommittedStream() throws {
        let records = try VectorFile.load("deterministic-random.txt", in: .module)
        #expect(records.count == 2)
        for record in records {
            let random = DeterministicRandom(seed: try record.hex("SEED"))
            #expect(try random.bytes(64) == record.hex("STREAM"), "\(record)")
        }
    }

    @Test func deterministicRandomFirstBlockIsAESOfZeroCounter() throws {
        // AES-256 with the all-zero key over the all-zero block (checked with openssl enc -aes-256-ctr).
        let random = DeterministicRandom(seed: [UInt8](repeating: 0, count: 32))
        #expect(try random.bytes(32).hex == "dc95c078a2408989ad48a21492842087530f8afbc74536b9a963b4f1c4cb738b")
    }

    @Test func deterministicRandomContinuesAcrossFills() throws {
        let seed = [UInt8](repeating: 0x42, count: 32)
        let whole = try DeterministicRandom(seed: seed).bytes(100)
        let pieces = DeterministicRandom(seed: seed)
        let joined = try pieces.bytes(10) + pieces.bytes(1) + pieces.bytes(0) + pieces.bytes(22) + pieces.bytes(67)
        #expect(joined == whole)
    }

    @Test func deterministicRandomHandsOutEachBlockOnceUnderConcurrency() async throws {
        let seed = [UInt8](repeating: 0x17, count: 32)
        let expected = try DeterministicRandom(seed: seed).bytes(16 * 800)
        let expectedBlocks = Set(stride(from: 0, to: expected.count, by: 16).map { Array(expected[$0..<$0 + 16]) })
        let shared = DeterministicRandom(seed: seed)
        let blocks = try await withThrowingTaskGroup(of: [[UInt8]].self) { group in
            for _ in 0..<8 {
                group.addTask { try (0..<100).map { _ in try shared.bytes(16) } }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(blocks.count == 800)
        #expect(Set(blocks) == expectedBlocks)
    }

    @Test func failingRandomFails() {
        #expect(throws: CryptoError.randomSourceFailed) { try FailingRandom().bytes(1) }
        #expect(throws: CryptoError.randomSourceFailed) { try FailingRandom().uniform(10) }
    }

    @Test func uniformRejectsTheBiasedRange() throws {
        // For n = 3, 2^64 mod 3 == 1: a draw of 0 must be rejected, then 5 gives 5 % 3 == 2.
        let scripted = ScriptedRandom(littleEndianBytes(0) + littleEndianBytes(5))
        #expect(try scripted.uniform(3) == 2)
        #expect(scripted.consumed == 16)
        // For n = 6, 2^64 mod 6 == 4: draws 0...3 are rejected, 4 is the first accepted (4 % 6).
        let six = ScriptedRandom(littleEndianBytes(3) + littleEndianBytes(4))
        #expect(try six.uniform(6) == 4)
        // A power of two needs no rejection: 0 is accepted at once.
        let eight = ScriptedRandom(littleEndianBytes(0))
        #expect(try eight.uniform(8) == 0)
        #expect(try ScriptedRandom(littleEndianBytes(.max)).uniform(1) == 0)
    }

    @Test func uniformIsInRangeAndRoughlyFlat() throws {
        let random = DeterministicRandom(seed: [UInt8](repeating: 3, count: 32))
        var counts = [Int](repeating: 0, count: 10)
        for _ in 0..<20000 { counts[try random.uniform(10)] += 1 }
        #expect(counts.allSatisfy { (1700...2300).contains($0) }, "\(counts)")
        for bound in [0, -3] {
            #expect(throws: CryptoError.self) { try random.uniform(bound) }
        }
    }
}
