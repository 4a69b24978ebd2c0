import Foundation
import Glibc
import Testing
import DotSafeTestSupport
import VaultCrypto
import VaultFormat
@testable import VaultStore

/// docs/FORMAT.md §11.2, issue 12 item 4: every storage file has one size, so `rsync -a` and
/// other copy tools skip a file whose modification time is in the same whole second as the one
/// they copied. A file whose bytes changed since a copy saw it must get a later whole second,
/// whatever changed it: the session's writes, another vault's session in between, a removal
/// and a new file at the name, a download. Each test first puts the times ahead of the clock
/// (as a lock within the second of the one before pushes them, or a clock set back leaves
/// them): every time the clock gives afterwards falls in a second a copy saw, or an earlier
/// one, so what these tests see does not depend on how fast the machine is.
@Suite struct LockTimeTests {
    /// A storage whose files all hold one time, `ahead` seconds past the clock's.
    static func storage(ahead: Int64 = 30) throws -> (path: String, files: [String], time: Int64) {
        let path = try StorageRecreatorTests.storage()
        let files = try Storage.open(at: path).listFiles().sorted()
        let time = (Int64(Date().timeIntervalSince1970) + ahead) * 1_000_000_000 + 500_000_000
        #expect(try StorageRecreator(path: path).recreate(files, time: time) == files)
        return (path, files, time)
    }

    /// Writes the complement of the byte at `offset`: a change whatever the random byte was (a
    /// fixed byte equals it one time in 256, and a copy then sees no change).
    static func change(_ storage: any StorageFolder, _ name: String, at offset: Int) throws {
        let byte = try storage.read(name, offset: offset, count: 1)[0]
        try storage.write(name, offset: offset, bytes: [~byte])
    }

    /// The lock's least time: the second after each time a file had before a change (before
    /// 1970 too), never earlier than a time a re-created file holds.
    @Test func theLeastTimeIsTheSecondAfterEveryChangeAndNoEarlierThanAnyFileHolds() {
        #expect(LockTime.wholeSecond(after: 5_500_000_000) == 6_000_000_000)
        #expect(LockTime.wholeSecond(after: 6_000_000_000) == 7_000_000_000)
        #expect(LockTime.wholeSecond(after: -1) == 0 && LockTime.wholeSecond(after: -1_000_000_000) == 0)
        #expect(LockTime.wholeSecond(after: -1_000_000_001) == -1_000_000_000)
        #expect(LockTime.least(changed: [5_500_000_000, 0], held: [6_200_000_000, 1]) == 6_200_000_000)
        #expect(LockTime.least(changed: [6_500_000_000], held: [6_200_000_000]) == 7_000_000_000)
        #expect(LockTime.least(changed: [], held: []) == .min)
    }

    static func everything() -> RecreationBudget { RecreationBudget(share: 1, secondsPerGiB: 3600) }

    /// Two vaults' sessions at once (each its own open of the folder, as each is its own
    /// process), a copy before them and one between the two locks: after both locks, every file
    /// either copy saw with other bytes is in a later second. The CI failure: B's lock re-created
    /// A's changed files with the clock's time, back in the second the first copy saw.
    @Test func everyFileChangedSinceACopyMovesToALaterSecond() throws {
        let (path, files, _) = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let first = try CopiedFile.snapshot(path)
        let a = try Storage.open(at: path, recreation: Self.everything())
        let b = try Storage.open(at: path, recreation: Self.everything())
        try a.write(files[0], offset: 9, bytes: [1, 2, 3])
        try a.write(files[1], offset: 9, bytes: [1, 2, 3])
        // A name removed and made again in one session: the copy saw other bytes at it.
        try a.remove(files[2])
        try a.create(files[2], contents: try SystemRandom().bytes(Format.fileSize), durable: false)
        try Self.change(b, files[3], at: 9)
        try a.recreateAtLock(random: SystemRandom())
        let between = try CopiedFile.snapshot(path)
        #expect(CopiedFile.expectChangesSeen(since: first, now: between, "after A's lock") == 4)
        // B writes again a file A's lock re-created, and one it had not written yet.
        try Self.change(b, files[3], at: 10)
        try Self.change(b, files[4], at: 10)
        try b.recreateAtLock(random: SystemRandom())
        let last = try CopiedFile.snapshot(path)
        #expect(CopiedFile.expectChangesSeen(since: first, now: last, "after B's lock") == 5)
        #expect(CopiedFile.expectChangesSeen(since: between, now: last, "after B's lock, since the copy between") == 2)
        // Whoever wrote them, the files of one lock share its time: it tells no vault's from another's.
        let times = Set(last.filter { between[$0.key]?.inode != $0.value.inode }.map(\.value.modification))
        #expect(times.count == 1, "\(times.sorted())")
        #expect(last.count == first.count)
    }

    /// A file the session writes again after a copy saw its first write (a backup while the
    /// vault is mounted) moves past that write's second too, not only past the time it had
    /// before the session.
    @Test func aFileWrittenAgainAfterACopyMovesPastTheCopysSecond() throws {
        let (path, files, time) = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let a = try Storage.open(at: path, recreation: RecreationBudget(share: 0, secondsPerGiB: 3600))
        try a.write(files[0], offset: 0, bytes: [1])
        // Another vault's lock re-creates it, a second further ahead, and a copy sees that.
        #expect(try StorageRecreator(path: path).recreate([files[0]], time: time + 1_000_000_000) == [files[0]])
        let copy = try CopiedFile.snapshot(path)
        try a.write(files[0], offset: 0, bytes: [2])
        try a.recreateAtLock(random: SystemRandom())
        #expect(CopiedFile.expectChangesSeen(since: copy, now: try CopiedFile.snapshot(path), "after the lock") == 1)
    }

    /// A sync's download writes files from outside the folder (rclone): named to the folder
    /// first, they are the session's files, re-created and moved to a later second at lock.
    @Test func aDownloadedFileMovesToALaterSecond() throws {
        let (path, files, _) = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let copy = try CopiedFile.snapshot(path)
        let a = try Storage.open(at: path, recreation: RecreationBudget(share: 0, secondsPerGiB: 3600))
        try a.willOverwrite([files[0], "missingmissingmissingmissi"])
        // As rclone writes it: truncated and written at its name.
        #expect(FileManager.default.createFile(atPath: path + "/" + files[0], contents: Data(repeating: 7, count: Format.fileSize)))
        try a.recreateAtLock(random: SystemRandom())
        #expect(a.lastRecreation?.written == 1)
        #expect(CopiedFile.expectChangesSeen(since: copy, now: try CopiedFile.snapshot(path), "after the lock") == 1)
    }

    /// A lock that wrote nothing in the second it runs leaves re-created files of others no
    /// earlier than they were: a time a lock pushed ahead stays.
    @Test func aRecreatedFileKeepsATimeAheadOfTheClock() throws {
        let (path, files, time) = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let a = try Storage.open(at: path, recreation: Self.everything())
        let new = FileName.encode([UInt8](repeating: 3, count: 16))
        try a.create(new, contents: [UInt8](repeating: 1, count: Format.fileSize), durable: true)
        try a.recreateAtLock(random: SystemRandom())
        let now = try CopiedFile.snapshot(path)
        #expect(a.lastRecreation?.recreated == files.count + 1)
        #expect(files.allSatisfy { now[$0]!.modification == time }, "\(files.map { now[$0]!.modification })")
        #expect(now[new]?.modification == time, "the new file gets the lock's one time")
    }

    /// A written file the lock cannot re-create (here a second link, someone's on purpose, which
    /// a copy would cut) still gets the lock's time.
    @Test func aWrittenFileTheLockCannotRecreateStillMovesOn() throws {
        let (path, files, _) = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let copy = try CopiedFile.snapshot(path)
        let a = try Storage.open(at: path, recreation: RecreationBudget(share: 0, secondsPerGiB: 3600))
        try Self.change(a, files[0], at: 0)
        #expect(link(path + "/" + files[0], path + "/second-link") == 0)
        try a.recreateAtLock(random: SystemRandom())
        #expect(a.lastRecreation?.recreated == 0)
        let now = try CopiedFile.snapshot(path)
        #expect(now[files[0]]?.inode == copy[files[0]]?.inode, "a file with two links is not re-created")
        #expect(CopiedFile.expectChangesSeen(since: copy, now: now, "after the lock") == 1)
    }
}
