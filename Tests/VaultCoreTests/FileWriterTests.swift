import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// The file writer alone: which numbers it writes, when it makes a group, and what it never
/// touches.
@Suite struct FileWriterTests {
    /// A writer for a new vault with two covers: group 0 is numbers 0 … 15, files 4 … 15 free.
    static func writer() throws -> (FileWriter, SimulatedStorageFolder) {
        let storage = SimulatedStorageFolder()
        let writer = FileWriter(storage: storage, secrets: try TestVaults.secrets(), random: SystemRandom(),
                                allocator: FileAllocator(newVaultWithCovers: 2))
        return (writer, storage)
    }

    static let file = [UInt8](repeating: 0xAB, count: Format.fileSize)

    @Test func storesIntoTheLowestFreeNumberAndSyncsBeforeTheRoot() throws {
        var (writer, storage) = try Self.writer()
        let numbers = try (0..<2).map { _ in try writer.store(Self.file) }
        #expect(numbers == [4, 5])
        #expect(try storage.read(try writer.name(4)) == Self.file)
        #expect(writer.hasUnsyncedFiles && writer.createdSinceCommit)
        try writer.syncData()
        #expect(!writer.hasUnsyncedFiles && !writer.createdSinceCommit)
        #expect(storage.snapshot.count == 2, "nothing else is made before the commit")
    }

    @Test func dataLeavesTheLastFreeFilesAndMakesAWholeGroupFirst() throws {
        var (writer, storage) = try Self.writer()
        let numbers = try (0..<8).map { _ in try writer.store(Self.file, data: true) }
        #expect(numbers == Array(4..<12))
        #expect(writer.allocator.freeCount == FileWriter.reservedFiles)
        #expect(writer.allocator.nextFileNumber == 16)
        _ = try writer.store(Self.file, data: true)
        #expect(writer.allocator.nextFileNumber == 32, "a new group is made before data takes the reserve")
        #expect(storage.snapshot.count == 8 + 16 + 1, "the new group's files exist whole")
        // Index pages may take the reserve: no group for them.
        for _ in 0..<3 { _ = try writer.store(Self.file) }
        #expect(writer.allocator.nextFileNumber == 32)
        try writer.createUnwrittenFiles()
        #expect(storage.snapshot.count == 32 - 2, "every file of the groups but the slots, covers included")
    }

    @Test func somethingNotOursAtANameIsNeverReplaced() throws {
        var (writer, storage) = try Self.writer()
        let foreign = [UInt8](repeating: 0x11, count: Format.fileSize)
        try storage.create(try writer.name(4), contents: foreign, durable: true)
        let number = try writer.store(Self.file)
        #expect(number == 5)
        #expect(try storage.read(try writer.name(4)) == foreign)
    }

    @Test func unusedNewGroupsAreDropped() throws {
        var (writer, storage) = try Self.writer()
        for _ in 0..<9 { _ = try writer.store(Self.file, data: true) }
        #expect(writer.allocator.nextFileNumber == 32)
        // Everything the new group was made for goes again before the commit.
        for number in UInt64(4)..<13 { writer.release(number) }
        try writer.dropUnusedNewGroups()
        #expect(writer.allocator.nextFileNumber == 16)
        #expect(try (16..<32).allSatisfy { try !storage.entryExists(try writer.name($0)) })
    }

    /// An upgrade's unlock record (docs/FORMAT.md §13.9 step 2): over an existing free file,
    /// written, synced, then renamed (the number of files stays); in a file of a new group not
    /// made yet, created at its name. Either way the folder is synced before the root.
    @Test func anUpgradeRecordTakesAFreeFilesPlace() throws {
        var (writer, storage) = try Self.writer()
        let existing = try writer.store(Self.file)
        try writer.syncData()
        writer.release(existing)
        writer.allocator.didCommit()
        let record = [UInt8](repeating: 0x5C, count: Format.fileSize)
        let count = storage.snapshot.count
        let name = FileName.encode([UInt8](repeating: 7, count: Format.nameBytes))
        try writer.placeUnlockRecord(record, number: existing, name: name)
        #expect(storage.snapshot.count == count && storage.snapshot[name] == record)
        #expect(try !storage.entryExists(try writer.name(existing)))
        #expect(writer.createdSinceCommit)
        storage.powerLoss()
        #expect(storage.snapshot[try writer.name(existing)] == record && storage.snapshot[name] == nil,
                "before the folder sync a power loss brings the old name back, with the record's bytes")

        let fresh = writer.allocator.makeGroup().lowerBound
        let other = FileName.encode([UInt8](repeating: 8, count: Format.nameBytes))
        try writer.placeUnlockRecord(record, number: fresh, name: other)
        #expect(storage.snapshot[other] == record && !writer.allocator.needsCreate(fresh))
        #expect(try !storage.entryExists(try writer.name(fresh)))
    }
}
