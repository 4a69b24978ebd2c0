@testable import VaultCore
import Testing
import VaultFormat
import VaultStore

/// Groups a commit releases take their file blocks along (docs/FORMAT.md §15.4): a root whose
/// device entry no longer owns a number of block k holds no file block k. Found by hand: 512 MiB
/// kept, 512 MiB written and deleted, lock, and the next mount refused the vault ("invalid file
/// block 1: the device owns none of its numbers").
@Suite struct FileBlockReleaseTests {
    static let kept = TestVaults.content(3 * Format.payloadSize, seed: 1)
    static let churn = TestVaults.content(128 * Format.payloadSize, seed: 2)

    /// A file of 128 chunks written and deleted again and again: each time the commit releases
    /// its groups but the lowest (kept for the next writes), so the numbers climb. When they
    /// cross into block 1 while the kept group stays in block 0, the release leaves block 1
    /// without an owned number. Every root written opens again.
    @Test func aBlockWhoseGroupsAreReleasedGoesWithThem() throws {
        let storage = try TestVaults.storage()
        var vault = try TestVaults.open(storage, indexThree: true)
        try vault.makeFile("kept", Self.kept)
        var emptiedBlocks = 0
        while Self.nextNumber(vault) < IndexKeyV3.numbersPerBlock + 4 * 128 {
            let written = try Self.churnOnce(vault)
            emptiedBlocks += written.subtracting(Self.ownedBlocks(vault)).count
            try vault.lock()
            vault = try TestVaults.open(storage, indexThree: true)
        }
        // The case above happened, or this test proves nothing.
        #expect(emptiedBlocks > 0)
        try Self.expectWhole(vault, "after the churn")
        try vault.lock()
        try checkStorageInvariants(storage)
    }

    /// What releases before the fix wrote (`FileWriter.releasesAtRoot`): a root holding an
    /// empty file block of which the device owns no number. It opens and checks clean, and the
    /// next commit removes the block.
    @Test func anEarlierReleasesLeftoverBlockOpensAndGoes() throws {
        let storage = try TestVaults.storage()
        var vault = try TestVaults.open(storage, indexThree: true)
        vault.state.withLock { $0.writer.releasesAtRoot = true }
        try vault.makeFile("kept", Self.kept)
        while try Self.leftoverBlocks(vault).isEmpty {
            try #require(Self.nextNumber(vault) < 2 * IndexKeyV3.numbersPerBlock, "no leftover block")
            _ = try Self.churnOnce(vault)
        }
        try vault.lock()

        vault = try TestVaults.open(storage, indexThree: true)
        #expect(try !Self.leftoverBlocks(vault).isEmpty, "the reopened vault holds the leftover")
        try Self.expectWhole(vault, "the leftover opened")
        try vault.makeFile("after", Array("one more".utf8))
        try vault.commit()
        #expect(try Self.leftoverBlocks(vault).isEmpty)
        try IndexThreeVaultTests.expectRecordsExact(vault, "the next commit")
        try vault.lock()

        vault = try TestVaults.open(storage, indexThree: true)
        defer { try? vault.lock() }
        try IndexThreeVaultTests.expectRecordsExact(vault, "reopened")
        try Self.expectWhole(vault, "reopened")
    }

    /// After a commit's pages are placed, the groups their old pages freed are released only
    /// where the block keeps an owned group (`FileWriter.releaseGroups(keepingBlocks:)`).
    /// Groups 0 to 3 and 256 (numbers 4096 … 4111, block 1) owned, 2, 3 and 256 all free.
    @Test func aReleaseAfterThePagesKeepsTheBlocks() {
        let device = DeviceEntry(deviceID: [UInt8](repeating: 1, count: DeviceEntry.idSize), namesKey: [UInt8](repeating: 2, count: 32),
                                 itemPrefix: 1, nextItemCounter: 2, nextFileNumber: 257 * 16, coverCount: 4,
                                 ownedGroups: [GroupRange(first: 0, count: 4), GroupRange(first: 256, count: 1)], releasing: [], name: [])
        let used = Set<UInt64>(Format.indexSlotCount + 4..<32)
        func groups(_ numbers: [UInt64]) -> Set<UInt64> { Set(numbers.map { $0 / 16 }) }
        var allocator = FileAllocator(device: device, used: used)
        // The lowest free group stays for the next writes.
        #expect(groups(allocator.takeReleasableGroups()) == [3, 256])
        allocator = FileAllocator(device: device, used: used)
        #expect(groups(allocator.takeReleasableGroups(keepingBlocksOf: IndexKeyV3.numbersPerBlock)) == [3])
        #expect(IndexRecordsV3.Numbers(allocator).blocks == [0, 1])
    }

    /// Writes the churn file, commits, deletes it, commits; returns the blocks owned in between.
    static func churnOnce(_ vault: Vault) throws -> Set<UInt32> {
        try vault.makeFile("churn", churn)
        try vault.commit()
        let written = ownedBlocks(vault)
        try vault.remove(Array("churn".utf8), from: Vault.rootID)
        try vault.commit()
        return written
    }

    static func expectWhole(_ vault: Vault, _ context: String) throws {
        #expect(try vault.readAll("kept") == kept, "\(context)")
        let report = try vault.check()
        #expect(report.isClean, "\(context): \(report.storageProblems) \(report.damagedItems)")
    }

    static func nextNumber(_ vault: Vault) -> UInt64 { vault.state.withLock { $0.writer.allocator.nextFileNumber } }

    /// The blocks holding a number the device owns now.
    static func ownedBlocks(_ vault: Vault) -> Set<UInt32> {
        vault.state.withLock { IndexRecordsV3.Numbers($0.writer.allocator).blocks }
    }

    /// File blocks the index holds of which the device owns no number.
    static func leftoverBlocks(_ vault: Vault) throws -> Set<UInt32> {
        let owned = ownedBlocks(vault)
        let held = try vault.state.withLock { state in try #require(state.committer.indexThree).records.blocks.keys }
        return Set(held).subtracting(owned)
    }
}
