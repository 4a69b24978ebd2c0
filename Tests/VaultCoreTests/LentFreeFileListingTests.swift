import Testing
@testable import VaultCore
import VaultFormat
import VaultStore

/// docs/FORMAT.md §14.8, "The file count of a follow"; PERFORMANCE.md, "I/O-count tests": the
/// free files a follow cut short lent (missing while the storage's count is a multiple of 16)
/// are told apart with one listing of the storage, not one each. A commit that met them one by
/// one listed the folder once per missing file: 10^4 of them in a storage of 4·10^5 files
/// listed 4·10^9 names.
@Suite struct LentFreeFileListingTests {
    static let chunks = 30

    /// A vault with `chunks` free files (a file of as many chunks written, then deleted); every
    /// third of the lowest is renamed away, `lent` in all, as a follow's lending does (the count
    /// stays). Returns the storage, its counting view, and the numbers and names lent.
    static func lentVault(_ lent: Int) throws -> (base: SimulatedStorageFolder, storage: CountingStorageFolder,
                                                  lent: [(number: UInt64, name: String)]) {
        let base = try TestVaults.storage()
        let storage = CountingStorageFolder(base)
        var vault = try TestVaults.open(storage, cacheBytes: 64 << 20)
        try vault.makeFile("gone", TestVaults.content(chunks * Format.payloadSize))
        try vault.commit()
        try vault.remove(Array("gone".utf8), from: Vault.rootID)
        try vault.commit()
        try vault.lock()
        vault = try TestVaults.open(storage, cacheBytes: 64 << 20)
        let chosen = try vault.state.withLock { state in
            let free = state.writer.allocator.freeNumbers
            try #require(free.count >= 3 * lent, "\(free.count) free files")
            return try (0..<lent).map { free[3 * $0 + 1] }.map { (number: $0, name: try state.writer.name($0)) }
        }
        try vault.lock()
        for (i, file) in chosen.enumerated() {
            try base.rename(file.name, to: FileName.encode([UInt8](repeating: 0x5A, count: Format.nameBytes - 1) + [UInt8(i)]))
        }
        try checkStorageInvariants(base)
        return (base, storage, chosen)
    }

    @Test(arguments: [2, 6])
    func aCommitAcrossLentFreeFilesListsTheStorageOnce(lent count: Int) throws {
        let (base, storage, lent) = try Self.lentVault(count)
        let vault = try TestVaults.open(storage, cacheBytes: 64 << 20)
        storage.reset()
        // Chunks written last to first are not written behind: the commit stores each into a
        // free file, lowest first, across every lent one.
        let bytes = TestVaults.content(Self.chunks * Format.payloadSize, seed: 3)
        let id = try vault.create(.file, in: Vault.rootID, named: Array("new".utf8), mode: 0o644)
        for chunk in (0..<Self.chunks).reversed() {
            let range = chunk * Format.payloadSize..<(chunk + 1) * Format.payloadSize
            try vault.write(id, offset: UInt64(range.lowerBound), bytes: Array(bytes[range]))
        }
        try vault.commit()
        let listings = storage.current.lists
        let absent = vault.state.withLock { Set($0.writer.absentFreeNumbers) }
        try #require(lent.allSatisfy { absent.contains($0.number) }, "the commit met every lent number: \(absent)")
        #expect(listings <= 1, "\(listings) listings for \(count) lent free files")

        // Not made again: the count stays whole, and the vault is as written.
        for file in lent { #expect(try !base.entryExists(file.name), "file \(file.number) was made again") }
        try checkStorageInvariants(base)
        #expect(try vault.readAll("new") == bytes)
        let report = try vault.check()
        #expect(report.isClean, "\(report.storageProblems)")
        try vault.lock()
    }
}
