import Foundation
import Glibc
import Testing
import VaultCrypto
import VaultFormat
@testable import VaultStore

/// Re-creating storage files with identical bytes: new inode, same bytes and count, only files
/// of the storage's form, and a copy left by a cut-short re-creation is found and removed.
@Suite struct StorageRecreatorTests {
    static func storage() throws -> String {
        let path = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/dotsafe-test-recreate-\(UUID().uuidString)"
        try Storage.initialize(at: path, random: SystemRandom())
        return path
    }

    static func contents(_ path: String) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: path) {
            result[name] = FileManager.default.contents(atPath: path + "/" + name) ?? Data()
        }
        return result
    }

    @Test func recreatesWithIdenticalBytesAndNewInodes() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Reading contents here moves access times (no O_NOATIME): read first, then look.
        let bytes = try Self.contents(path)
        let before = try StorageScan.scan(path)
        let chosen = try StorageRecreator.choose(share: 0.5, of: before.files.map(\.name), random: SystemRandom())
        #expect(chosen.count == before.files.count / 2 && Set(chosen).count == chosen.count)
        let time: Int64 = 1_500_000_000_123_456_789
        let done = try StorageRecreator(path: path).recreate(chosen, time: time)
        #expect(done == chosen)
        let after = Dictionary(uniqueKeysWithValues: try StorageScan.scan(path).files.map { ($0.name, $0.metadata) })
        #expect(try Self.contents(path) == bytes, "same names, same bytes, nothing else")
        for file in before.files {
            let now = try #require(after[file.name])
            if chosen.contains(file.name) {
                #expect(now.inode != file.metadata.inode)
                #expect(now.modification == time && now.access == time)
                #expect(now.mode == file.metadata.mode && now.uid == file.metadata.uid)
            } else {
                #expect(now == file.metadata)
            }
        }
    }

    /// Without a given time, the time is taken once the folder is locked: never older than the
    /// last write before it (a changed file never keeps an old modification time).
    @Test func takesTheTimeOfTheLock() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try StorageScan.scan(path).files[0]
        let folder = try Storage.open(at: path)
        try folder.write(file.name, offset: 0, bytes: [9])
        let written = try #require(try StorageScan.scan(path).files.first { $0.name == file.name })
        #expect(try StorageRecreator(path: path).recreate([file.name]) == [file.name])
        let now = try #require(try StorageScan.scan(path).files.first { $0.name == file.name })
        #expect(now.metadata.modification >= written.metadata.modification && now.metadata.modification > file.metadata.modification)
        #expect(now.metadata.access == now.metadata.modification)
        #expect(now.metadata.inode != file.metadata.inode && now.metadata.mode == file.metadata.mode)
    }

    /// The lock's re-creation: every file the session wrote, and the share of the others.
    @Test func atLockEveryWrittenFileAndAShareOfTheOthers() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let before = try StorageScan.scan(path).files
        let written = Set(before.prefix(40).map(\.name))
        let budget = RecreationBudget(share: 0.5, secondsPerGiB: 3600)
        let summary = try StorageRecreator(path: path).recreateAtLock(written: written, budget: budget, random: SystemRandom())
        let after = Dictionary(uniqueKeysWithValues: try StorageScan.scan(path).files.map { ($0.name, $0.metadata) })
        let renewed = Set(before.filter { after[$0.name]?.inode != $0.metadata.inode }.map(\.name))
        #expect(written.isSubset(of: renewed))
        #expect(renewed.count - 40 == Int((0.5 * Double(before.count - 40)).rounded()))
        #expect(summary == StorageRecreator.Summary(recreated: renewed.count, written: 40, files: before.count, seconds: summary.seconds))
        #expect(after.count == before.count)
    }

    /// A budget of 0 re-creates the written files only; a budget that runs out at once drops
    /// the others' share but never a written file.
    @Test(arguments: [0.0, 1e-9])
    func aBudgetThatRunsOutKeepsTheWrittenFiles(secondsPerGiB: Double) throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let before = try StorageScan.scan(path).files
        let written = Set(before.suffix(40).map(\.name))
        let budget = RecreationBudget(share: 1, secondsPerGiB: secondsPerGiB, minimumSeconds: 0)
        let summary = try StorageRecreator(path: path, batchSize: 8).recreateAtLock(written: written, budget: budget, random: SystemRandom())
        let after = Dictionary(uniqueKeysWithValues: try StorageScan.scan(path).files.map { ($0.name, $0.metadata) })
        let renewed = Set(before.filter { after[$0.name]?.inode != $0.metadata.inode }.map(\.name))
        #expect(written.isSubset(of: renewed) && summary.written == 40)
        // With no budget at all, nothing else; with one that is gone after the first batch, at
        // most that batch's others.
        #expect(renewed.count - 40 <= (secondsPerGiB == 0 ? 0 : 8), "\(renewed.count)")
    }

    /// The storage folder remembers what this process wrote and re-creates it at lock.
    @Test func theFolderRecreatesWhatItWrote() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let folder = try Storage.open(at: path, recreation: RecreationBudget(share: 0, secondsPerGiB: 1))
        let files = try folder.listFiles()
        try folder.recreateAtLock(random: SystemRandom())
        #expect(folder.lastRecreation == nil, "a session that wrote nothing re-creates nothing")
        let new = FileName.encode([UInt8](repeating: 3, count: 16))
        try folder.create(new, contents: [UInt8](repeating: 1, count: Format.fileSize), durable: true)
        try folder.write(files[0], offset: 5, bytes: [1])
        try folder.write(files[1], offset: 5, bytes: [1])
        try folder.remove(files[1])
        try folder.recreateAtLock(random: SystemRandom())
        #expect(folder.lastRecreation?.recreated == 2 && folder.lastRecreation?.written == 2)
    }

    @Test func touchesNothingButRegularFilesOfTheStorageForm() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let target = try StorageScan.scan(path).files[0].name
        let short = FileName.encode([UInt8](repeating: 1, count: 16))
        let link = FileName.encode([UInt8](repeating: 2, count: 16))
        FileManager.default.createFile(atPath: path + "/" + short, contents: Data(count: 100))
        #expect(symlink(path + "/" + target, path + "/" + link) == 0)
        FileManager.default.createFile(atPath: path + "/notes.txt", contents: Data(count: Format.fileSize))
        let before = try Self.contents(path)
        var info = stat()
        lstat(path + "/" + short, &info)
        let shortInode = info.st_ino
        let done = try StorageRecreator(path: path).recreate([short, link, "notes.txt", "missingmissingmissingmissi"])
        #expect(done.isEmpty)
        #expect(try Self.contents(path) == before)
        lstat(path + "/" + short, &info)
        #expect(info.st_ino == shortInode)
        var linkInfo = stat()
        #expect(lstat(path + "/" + link, &linkInfo) == 0 && linkInfo.st_mode & S_IFMT == S_IFLNK)
    }

    /// A crash after the copy got its temporary name: the name still holds its bytes, the count
    /// of storage files is unchanged, and the next re-creation removes the copy.
    @Test func aCopyLeftByACrashIsIgnoredThenRemoved() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let name = try StorageScan.scan(path).files[0].name
        let count = try StorageScan.scan(path).files.count
        let copy = path + "/" + name + StorageRecreator.temporarySuffix
        #expect(FileManager.default.createFile(atPath: copy, contents: FileManager.default.contents(atPath: path + "/" + name)))
        #expect(StorageRecreator.isTemporary(name + StorageRecreator.temporarySuffix))
        #expect(!StorageRecreator.isTemporary("notes" + StorageRecreator.temporarySuffix))
        let scan = try StorageScan.scan(path)
        #expect(scan.files.count == count && scan.otherEntries == 1)
        #expect(try Storage.open(at: path).listFiles().count == count)
        #expect(try StorageRecreator(path: path).removeLeftovers() == 1)
        #expect(FileManager.default.createFile(atPath: copy, contents: Data(count: 7)))
        try Storage.open(at: path).removeRecreationLeftovers()
        #expect(!FileManager.default.fileExists(atPath: copy))
        #expect(try StorageScan.scan(path).otherEntries == 0)
    }

    /// The copies are made without holding the folder (writers of other vaults wait only for
    /// the swaps); a file written between its copy and its swap keeps what was written and is
    /// not swapped, the others are.
    @Test func copiesWithoutTheLockAndSwapsOnlyWhatDidNotChange() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let names = Array(try StorageScan.scan(path).files.prefix(4).map(\.name))
        let before = try Self.contents(path)
        let inodes = try Dictionary(uniqueKeysWithValues: StorageScan.scan(path).files.map { ($0.name, $0.metadata.inode) })
        let writer = open(path, O_RDONLY | O_DIRECTORY)
        defer { close(writer) }
        #expect(flock(writer, LOCK_EX) == 0)
        let done = Atomic<[String]?>(nil)
        let thread = Thread { done.store(try? StorageRecreator(path: path).recreate(names)) }
        thread.start()
        func copies() -> Int { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { $0.hasSuffix(".recreated") }.count }
        for _ in 0..<250 where copies() < 4 { usleep(20_000) }
        #expect(copies() == 4, "the copies were not made while the folder was held")
        #expect(done.load() == nil)
        let fd = open(path + "/" + names[0], O_WRONLY)
        #expect(pwrite(fd, [UInt8](repeating: 7, count: 16), 16, 0) == 16)
        close(fd)
        #expect(flock(writer, LOCK_UN) == 0)
        for _ in 0..<250 where done.load() == nil { usleep(20_000) }
        #expect(done.load().map(Set.init) == Set(names.dropFirst()))
        let after = try Self.contents(path)
        #expect(after[names[0]]?.prefix(16) == Data(repeating: 7, count: 16))
        #expect(after.filter { $0.key != names[0] } == before.filter { $0.key != names[0] }, "same names, same bytes, no copy left")
        let now = try Dictionary(uniqueKeysWithValues: StorageScan.scan(path).files.map { ($0.name, $0.metadata.inode) })
        #expect(now[names[0]] == inodes[names[0]])
        #expect(names.dropFirst().allSatisfy { now[$0] != inodes[$0] })
    }

    /// Later batches write their copies into the files the batch before replaced: only the
    /// first batch's copies are new files, yet no file keeps its inode, and every name its bytes.
    @Test func laterBatchesReuseTheFilesTheyReplaced() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let bytes = try Self.contents(path)
        let before = try StorageScan.scan(path).files
        let names = Array(before.prefix(32).map(\.name))
        let done = try StorageRecreator(path: path, batchSize: 8).recreate(names)
        #expect(done.count == 32)
        #expect(try Self.contents(path) == bytes, "same names, same bytes, no copy left")
        let old = Dictionary(uniqueKeysWithValues: before.map { ($0.name, $0.metadata.inode) })
        let now = try Dictionary(uniqueKeysWithValues: StorageScan.scan(path).files.map { ($0.name, $0.metadata.inode) })
        #expect(names.allSatisfy { now[$0] != old[$0] })
        let fresh = Set(names.compactMap { now[$0] }).subtracting(old.values)
        #expect(fresh.count == 8, "\(fresh.count) new files")
    }

    /// A reader that opened a file before its swap keeps reading that file's bytes: a replaced
    /// file someone still has open is not reused for a later copy.
    @Test func aFileStillOpenIsNotReused() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let names = Array(try StorageScan.scan(path).files.prefix(3).map(\.name))
        let expected = try #require(FileManager.default.contents(atPath: path + "/" + names[0]))
        let reader = open(path + "/" + names[0], O_RDONLY)
        defer { close(reader) }
        #expect(try StorageRecreator(path: path, batchSize: 1).recreate(names) == names)
        var buffer = [UInt8](repeating: 0, count: Format.fileSize)
        #expect(pread(reader, &buffer, buffer.count, 0) == buffer.count)
        #expect(Data(buffer) == expected, "the open file was overwritten with another file's copy")
        #expect(try StorageScan.scan(path).otherEntries == 0)
    }

    /// A writer holding the folder shared keeps a re-creation's swap out until it is done; its
    /// change lands after the copy, so the copy is dropped and the change kept.
    @Test func waitsForWritersHoldingTheFolderShared() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let name = try StorageScan.scan(path).files[0].name
        let writer = open(path, O_RDONLY | O_DIRECTORY)
        defer { close(writer) }
        #expect(flock(writer, LOCK_SH) == 0)
        let finished = Atomic(false)
        let thread = Thread { _ = try? StorageRecreator(path: path).recreate([name]); finished.store(true) }
        thread.start()
        usleep(300_000)
        #expect(!finished.load(), "re-creation swapped while a writer held the folder")
        let fd = open(path + "/" + name, O_WRONLY)
        #expect(pwrite(fd, [UInt8](repeating: 7, count: 16), 16, 0) == 16)
        close(fd)
        #expect(flock(writer, LOCK_UN) == 0)
        for _ in 0..<100 where !finished.load() { usleep(20_000) }
        #expect(finished.load())
        #expect(FileManager.default.contents(atPath: path + "/" + name)?.prefix(16) == Data(repeating: 7, count: 16))
    }

    /// DiskStorageFolder's writes wait while a re-creation holds the folder exclusively.
    @Test func writersWaitForARecreation() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let folder = try Storage.open(at: path)
        let name = try folder.listFiles()[0]
        let recreation = open(path, O_RDONLY | O_DIRECTORY)
        defer { close(recreation) }
        #expect(flock(recreation, LOCK_EX) == 0)
        let finished = Atomic(false)
        let thread = Thread { _ = try? folder.write(name, offset: 0, bytes: [1, 2, 3]); finished.store(true) }
        thread.start()
        usleep(300_000)
        #expect(!finished.load(), "a write ran during a re-creation")
        #expect(flock(recreation, LOCK_UN) == 0)
        for _ in 0..<100 where !finished.load() { usleep(20_000) }
        #expect(finished.load())
        #expect(try folder.read(name, offset: 0, count: 3) == [1, 2, 3])
        // Many threads writing at once share the lock and all finish.
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            _ = try? folder.write(name, offset: 16 * index, bytes: [UInt8](repeating: UInt8(index), count: 16))
        }
        #expect(flock(recreation, LOCK_EX | LOCK_NB) == 0, "the last writer left the folder unlocked")
    }

    /// Reads take no part in the lock (`DiskStorageFolder.read` says why): one during a
    /// re-creation returns at once, with the file's bytes.
    @Test func readersDoNotWaitForARecreation() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let folder = try Storage.open(at: path)
        let name = try folder.listFiles()[0]
        let expected = try #require(FileManager.default.contents(atPath: path + "/" + name))
        let recreation = open(path, O_RDONLY | O_DIRECTORY)
        defer { close(recreation) }
        #expect(flock(recreation, LOCK_EX) == 0)
        defer { flock(recreation, LOCK_UN) }
        let read = Atomic<[UInt8]?>(nil)
        let thread = Thread { read.store(try? folder.read(name, offset: 0, count: Format.fileSize)) }
        thread.start()
        for _ in 0..<100 where read.load() == nil { usleep(20_000) }
        #expect(read.load() == Array(expected), "a read waited for the re-creation's lock")
    }
}

/// A flag shared with a thread.
final class Atomic<Value: Sendable>: @unchecked Sendable {
    // Guarded by `lock`.
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func load() -> Value { lock.withLock { value } }
    func store(_ newValue: Value) { lock.withLock { value = newValue } }
}
