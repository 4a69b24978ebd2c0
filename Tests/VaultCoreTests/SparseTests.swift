import Testing
@testable import VaultCore
import VaultFormat
import VaultStore

/// docs/FORMAT.md §6.2, §7.3: holes cost nothing; a write far into a file costs one chunk.
@Suite struct SparseTests {
    static let payload = UInt64(Format.payloadSize)
    static let tebibyte: UInt64 = 1 << 40
    static let fiveGiB: UInt64 = 5 << 30

    /// A vault that has made its first commits (group 0 exists, covers refreshed this session),
    /// so that the next commit's diff shows only what it wrote.
    static func warmVault(_ storage: SimulatedStorageFolder) throws -> Vault {
        let vault = try TestVaults.open(storage)
        // Counted writes: no refill (format 2 refills the page a commit replaces at that commit).
        vault.state.withLock { $0.writer.refillsFreedFiles = false }
        try vault.makeFile("other", [1])
        try vault.commit()
        return vault
    }

    @Test func truncateToOneTebibyteMakesNoFile() throws {
        let storage = try TestVaults.storage()
        let numbers = try FileNumbers(storage)
        let vault = try Self.warmVault(storage)
        let before = storage.snapshot
        let id = try vault.makeFile("sparse", [])
        try vault.truncate(id, size: Self.tebibyte)
        try vault.commit()
        let diff = SnapshotDiff(before, storage.snapshot)
        #expect(diff.added.isEmpty && diff.removed.isEmpty, "no new storage file")
        #expect(numbers.dataFiles(diff.changed).count == 1, "one index page, besides the root")
        #expect(vault.statistics.chunkEncrypts == 0 && vault.statistics.memberEncrypts == 1)
        try vault.lock()

        let again = try TestVaults.open(storage)
        let sparse = try again.id(at: "sparse")
        #expect(try again.attributes(sparse).size == Self.tebibyte)
        for offset in [0, Self.payload - 10, Self.fiveGiB, Self.tebibyte / 2 + 12_345, Self.tebibyte - 4096] {
            #expect(try again.read(sparse, offset: offset, count: 4096) == [UInt8](repeating: 0, count: 4096), "at \(offset)")
        }
        // A read across the end stops there; one at or past the end reads nothing.
        #expect(try again.read(sparse, offset: Self.tebibyte - 100, count: 4096) == [UInt8](repeating: 0, count: 100))
        #expect(try again.read(sparse, offset: Self.tebibyte, count: 4096) == [])
        #expect(try again.read(sparse, offset: Self.tebibyte + 1 << 30, count: 10) == [])
        #expect(again.statistics.chunkDecrypts == 0)
        try again.lock()
        try checkStorageInvariants(storage)
    }

    @Test func writeAtFiveGiBMakesOneChunkFile() throws {
        let storage = try TestVaults.storage()
        let numbers = try FileNumbers(storage)
        let vault = try Self.warmVault(storage)
        let id = try vault.makeFile("sparse", [])
        try vault.truncate(id, size: Self.tebibyte)
        try vault.commit()
        let before = storage.snapshot
        let piece = TestVaults.content(4096, seed: 3)
        // Across a chunk boundary would be two chunks: this write stays inside one.
        try vault.write(id, offset: Self.fiveGiB + 1000, bytes: piece)
        try vault.commit()
        let written = numbers.dataFiles(SnapshotDiff(before, storage.snapshot).written)
        #expect(written.count == 2, "one chunk file and one index page")
        #expect(vault.statistics.chunkEncrypts == 1)
        try vault.lock()

        let again = try TestVaults.open(storage)
        #expect(try again.attributes(id).size == Self.tebibyte)
        #expect(try again.read(id, offset: Self.fiveGiB + 1000, count: 4096) == piece)
        #expect(try again.read(id, offset: Self.fiveGiB, count: 1000) == [UInt8](repeating: 0, count: 1000))
        #expect(try again.read(id, offset: Self.fiveGiB + 5096, count: 100) == [UInt8](repeating: 0, count: 100))
        #expect(try again.read(id, offset: Self.fiveGiB - 4096, count: 4096) == [UInt8](repeating: 0, count: 4096))
        #expect(try again.read(id, offset: 0, count: 10) == [UInt8](repeating: 0, count: 10))
        // R-MEM-1: a read decrypts only the chunk it touches.
        #expect(again.statistics.chunkDecrypts == 1)

        // Truncated back below the chunk, the chunk's file is free again and the bytes are gone.
        try again.truncate(id, size: Self.fiveGiB)
        try again.truncate(id, size: Self.tebibyte)
        #expect(try again.read(id, offset: Self.fiveGiB + 1000, count: 10) == [UInt8](repeating: 0, count: 10))
        try again.lock()
        let last = try TestVaults.open(storage)
        #expect(try last.read(id, offset: Self.fiveGiB + 1000, count: 10) == [UInt8](repeating: 0, count: 10))
        #expect(try last.attributes(id).size == Self.tebibyte)
        try last.lock()
        try checkStorageInvariants(storage)
    }

    /// A small file grown to 1 TiB: its content moves from the pack to chunk 0, nothing more.
    @Test func smallFileGrownByTruncateKeepsItsBytes() throws {
        let storage = try TestVaults.storage()
        let vault = try Self.warmVault(storage)
        let id = try vault.makeFile("grown", [5, 6, 7])
        try vault.commit()
        try vault.truncate(id, size: Self.tebibyte)
        try vault.commit()
        #expect(vault.statistics.chunkEncrypts == 1)
        try vault.lock()
        let again = try TestVaults.open(storage)
        #expect(try again.read(id, offset: 0, count: 5) == [5, 6, 7, 0, 0])
        #expect(try again.read(id, offset: Self.tebibyte - 3, count: 5) == [0, 0, 0])
        try again.truncate(id, size: 2)
        try again.lock()
        #expect(try TestVaults.open(storage).readAll("grown") == [5, 6])
        try checkStorageInvariants(storage)
    }
}
