import DotSafeTestSupport
import Glibc
import Testing
import VaultCrypto

@Suite struct SecretBytesTests {
    @Test func startsZeroedWithTheRequestedCount() throws {
        let secret = try SecretBytes(count: 100)
        #expect(secret.count == 100)
        #expect(secret.copyBytes() == [UInt8](repeating: 0, count: 100))
        secret.withUnsafeBytes { #expect($0.count == 100) }
        #expect(try SecretBytes(count: 0).copyBytes() == [])
    }

    @Test func negativeCountIsRejected() {
        #expect(throws: CryptoError.self) { try SecretBytes(count: -1) }
    }

    @Test func copyingRoundTrips() throws {
        let bytes: [UInt8] = Array(0..<200)
        let secret = try SecretBytes(copying: bytes)
        #expect(secret.copyBytes() == bytes)
        secret.withUnsafeBytes { #expect(Array($0) == bytes) }
    }

    @Test func wipeZeroes() throws {
        let secret = try SecretBytes.random(count: 64)
        #expect(secret.copyBytes() != [UInt8](repeating: 0, count: 64))
        secret.wipe()
        #expect(secret.copyBytes() == [UInt8](repeating: 0, count: 64))
    }

    /// Exactly the bytes asked for, from any address and of any length (a chunk's 256 KiB, an
    /// odd tail), and no byte beside them.
    @Test func secureZeroWipesExactlyItsRange() {
        for (start, count) in [(0, 262_144), (3, 1), (7, 4093), (1, 65_537)] {
            var bytes = [UInt8](repeating: 0xA5, count: start + count + 9)
            bytes.withUnsafeMutableBytes { SecureZero.wipe(UnsafeMutableRawBufferPointer(rebasing: $0[start..<start + count])) }
            #expect(bytes[start..<start + count].allSatisfy { $0 == 0 }, "\(count) bytes at \(start)")
            #expect(bytes[..<start].allSatisfy { $0 == 0xA5 } && bytes[(start + count)...].allSatisfy { $0 == 0xA5 })
        }
        var array = [UInt8](repeating: 7, count: 33)
        array.wipe()
        #expect(array == [UInt8](repeating: 0, count: 33))
    }

    @Test func randomDiffersEachTime() throws {
        let a = try SecretBytes.random(count: 32), b = try SecretBytes.random(count: 32)
        #expect(a.copyBytes() != b.copyBytes())
        #expect(a.copyBytes() != [UInt8](repeating: 0, count: 32))
    }

    @Test func randomTakesItsBytesFromTheSource() throws {
        let seed = [UInt8](repeating: 5, count: 32)
        let secret = try SecretBytes.random(count: 48, using: DeterministicRandom(seed: seed))
        #expect(secret.copyBytes() == (try DeterministicRandom(seed: seed).bytes(48)))
    }

    @Test func randomReportsSourceFailure() {
        #expect(throws: CryptoError.randomSourceFailed) { try SecretBytes.random(count: 32, using: FailingRandom()) }
    }

    @Test(.enabled(if: isRoot, "mlock needs CAP_IPC_LOCK or RLIMIT_MEMLOCK headroom; root always has it"))
    func isLockedAsRoot() throws {
        #expect(try SecretBytes(count: 32).isLocked)
        #expect(try SecretBytes(count: 3 * 4096 + 1).isLocked)
    }

    @Test func livesInItsOwnNoDumpWipeOnForkPages() throws {
        let page = sysconf(Int32(_SC_PAGESIZE))
        let secrets = try (0..<3).map { _ in try SecretBytes(count: 32) }
        var starts: [UInt] = []
        for secret in secrets {
            let flags = try secret.withUnsafeBytes { bytes -> Set<String> in
                let start = UInt(bitPattern: bytes.baseAddress)
                #expect(start % UInt(page) == 0, "not page aligned")
                starts.append(start)
                return try vmFlags(containing: bytes.baseAddress!)
            }
            #expect(flags.contains("dd"), "MADV_DONTDUMP missing: \(flags.sorted())")
            #expect(flags.contains("wf"), "MADV_WIPEONFORK missing: \(flags.sorted())")
            if isRoot { #expect(flags.contains("lo"), "not mlock'ed: \(flags.sorted())") }
        }
        #expect(Set(starts).count == 3, "secrets share a page")
    }

    /// Single pages are recycled (SecretPagePool); a recycled page must come back all zeros.
    @Test func releasedPagesComeBackZeroed() throws {
        let page = sysconf(Int32(_SC_PAGESIZE))
        for _ in 0..<3 {
            var dirty = try (0..<100).map { _ in try SecretBytes(copying: [UInt8](repeating: 0xFF, count: page)) }
            #expect(dirty.allSatisfy { $0.copyBytes().allSatisfy { $0 == 0xFF } })
            dirty.removeAll()
            let fresh = try (0..<100).map { _ in try SecretBytes(count: page) }
            for secret in fresh { #expect(secret.copyBytes().allSatisfy { $0 == 0 }) }
        }
    }

    @Test func canBeSharedAcrossTasks() async throws {
        let secret = try SecretBytes(copying: Array(repeating: 0x5A, count: 32))
        let copies = await withTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<8 { group.addTask { secret.copyBytes() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(copies.count == 8 && copies.allSatisfy { $0 == [UInt8](repeating: 0x5A, count: 32) })
    }
}
