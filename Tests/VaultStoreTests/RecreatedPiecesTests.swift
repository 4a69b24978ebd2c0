import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultCrypto
import VaultFormat
@testable import VaultStore

/// Whether the tests' folder keeps an extent map (ext4 does, tmpfs does not).
private let testsFolderKeepsExtentMap: Bool = {
    guard let path = try? TestFolder.make("extent-map") else { return false }
    defer { TestFolder.remove(path) }
    guard FileManager.default.createFile(atPath: path + "/file", contents: Data(count: 4096)),
          let folder = try? Syscalls.openFolder(path) else { return false }
    defer { Syscalls.close(folder) }
    return Syscalls.extentMap(folder, "file") != nil
}()

/// R-DEN-1 on the disk's map, for a storage an earlier release wrote: its streamed writes left
/// files in two pieces (the whole pages past the page cache at once, the last 48 bytes at
/// write-back, after the next files' blocks), where `init`'s covers lie in one. The lock's
/// re-creation wrote its copies into the files the batch before replaced, rewriting them in
/// place, so a two-piece file lived on under another name and their number never went down.
/// A replaced file in more than one piece is now removed and the next copy is a new file.
@Suite(.enabled(if: testsFolderKeepsExtentMap, "the tests' folder (TMPDIR) keeps no extent map (FIEMAP): not ext4?"))
struct RecreatedPiecesTests {
    /// Rewrites each of `names` as the earlier release wrote a streamed file: new files, their
    /// whole pages with `O_DIRECT` one file after the other, then their tails through the cache
    /// (no `fallocate`), then renamed over the names. Returns the names now in two pieces, as
    /// `filefrag` (e2fsprogs) counts them.
    static func makeTwoPiece(_ names: [String], in storage: String) throws -> Set<String> {
        let list = names.joined(separator: " ")
        _ = try shell("""
            for n in \(list); do dd if=$n of=$n.old bs=\(Format.fileSize / 4096 * 4096) count=1 oflag=direct status=none; done
            for n in \(list); do tail -c \(Format.fileSize % 4096) $n >> $n.old; chmod 600 $n.old; done
            sync -f .
            for n in \(list); do mv $n.old $n; done
            """, in: storage)
        return Set(try pieces(names, in: storage).filter { $0.value == 2 }.keys)
    }

    /// Each of `names` with its number of pieces, as `filefrag` (e2fsprogs) counts them.
    static func pieces(_ names: [String], in storage: String) throws -> [String: Int] {
        // "NAME: 2 extents found", "NAME: 1 extent found"
        let lines = try shell("filefrag \(names.joined(separator: " "))", in: storage).split(separator: "\n")
        return Dictionary(uniqueKeysWithValues: lines.compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 4, let count = Int(parts[1]) else { return nil }
            return (String(parts[0].dropLast()), count)
        })
    }

    /// The audit's row for the extent count.
    static func extentsRow(_ scan: StorageScan) -> MetadataAudit.Field? {
        MetadataAudit(scan: scan).fields.first { $0.feature == .extents }
    }

    /// The scan counts every piece of a file, as `filefrag` does. From aeb5bc4 on it asked
    /// FIEMAP with room for one extent, where the kernel stops counting at one: every file
    /// looked like one piece, and the audit could not show `pieces`.
    @Test func theScanCountsEveryPiece() throws {
        let storage = try StorageRecreatorTests.storage()
        defer { TestFolder.remove(storage) }
        let names = try StorageScan.scan(storage).files.prefix(8).map(\.name)
        let twoPiece = try Self.makeTwoPiece(names, in: storage)
        try #require(twoPiece.count >= 6, "only \(twoPiece.count) of 8 files lie in two pieces")
        let scan = try StorageScan.scan(storage)
        // Against filefrag for every file, not the set-up's split alone: on a busy disk whose
        // free space is in pieces, one of the storage's own files may lie in two (a full run
        // here found one).
        let counted = try Self.pieces(scan.files.map(\.name), in: storage)
        #expect(counted.count == scan.files.count)
        #expect(Dictionary(uniqueKeysWithValues: scan.files.map { ($0.name, $0.extents ?? 0) }) == counted)
        #expect(twoPiece.allSatisfy { counted[$0] == 2 })
        #expect(scan.files.allSatisfy { $0.firstBlock != nil })
        let extents = Self.extentsRow(scan)
        #expect(extents?.verdict == .pieces, "\(String(describing: extents?.detail))")
    }

    /// A session that writes, then its lock re-creating every file (share 1, a budget that
    /// allows it) in batches of 128: afterwards no file is in more than one piece, and the audit
    /// finds nothing in the extents. Before, the two-piece files of the first batch took the
    /// second batch's copies and stayed in two pieces.
    @Test func aLockThatRecreatesEveryFileLeavesEachInOnePiece() throws {
        let storage = try StorageRecreatorTests.storage()
        defer { TestFolder.remove(storage) }
        // At least two batches: the first batch's replaced files take the second's copies.
        let earlier = try Storage.open(at: storage)
        while try earlier.listFiles().count < 2 * StorageRecreator.batchSize {
            try Storage.addCovers(to: earlier, random: SystemRandom())
        }
        let all = try earlier.listFiles()
        let old = try StorageRecreator.choose(share: 0.5, of: all, random: SystemRandom())
        let twoPiece = try Self.makeTwoPiece(old, in: storage)
        try #require(twoPiece.count >= old.count * 9 / 10, "only \(twoPiece.count) of \(old.count) files lie in two pieces: the setup is not the earlier release's")

        let session = try Storage.open(at: storage, recreation: RecreationBudget(share: 1, secondsPerGiB: 3600))
        try session.write(all[0], offset: 100, bytes: [1, 2, 3])
        try session.createGroup((0..<Format.groupSize).map { _ in try Storage.cover(random: SystemRandom()) })
        let bytes = try StorageRecreatorTests.contents(storage)
        try session.recreateAtLock(random: SystemRandom())

        #expect(session.lastRecreation?.recreated == all.count + Format.groupSize)
        #expect(try StorageRecreatorTests.contents(storage) == bytes, "same names, same bytes, no copy left")
        let scan = try StorageScan.scan(storage)
        let pieces = Dictionary(grouping: scan.files, by: { $0.extents ?? 0 }).mapValues(\.count)
        #expect(pieces == [1: all.count + Format.groupSize], "files by extent count: \(pieces)")
        let extents = Self.extentsRow(scan)
        #expect(extents?.verdict == .hides, "\(String(describing: extents?.detail))")
    }

    /// The replaced files of a batch in more than one piece are not reused: the next batch's
    /// copies go to new files for them, each in one piece, and to the other replaced files as
    /// before. A file not re-created keeps its layout.
    @Test func aReplacedFileInTwoPiecesTakesNoCopy() throws {
        let storage = try StorageRecreatorTests.storage()
        defer { TestFolder.remove(storage) }
        let before = try StorageScan.scan(storage).files
        let names = before.prefix(32).map(\.name)
        let left = before[32].name
        // The trick splits nearly every file; a busy disk may leave one whole (a full run here: 4 of 5).
        let twoPiece = try Self.makeTwoPiece(Array(names.prefix(4)) + [left], in: storage)
        try #require(twoPiece.count >= 3 && names.prefix(4).contains(where: twoPiece.contains), "\(twoPiece.count) of 5 files lie in two pieces")
        let bytes = try StorageRecreatorTests.contents(storage)
        let files = try StorageScan.scan(storage).files
        let old = Dictionary(uniqueKeysWithValues: files.map { ($0.name, $0.metadata.inode) })
        let born = try #require(files.compactMap(\.metadata.birth).max(), "no birth times")

        #expect(try StorageRecreator(path: storage, batchSize: 8).recreate(names) == names)

        #expect(try StorageRecreatorTests.contents(storage) == bytes, "same names, same bytes, no copy left")
        let after = try StorageScan.scan(storage).files
        let now = Dictionary(uniqueKeysWithValues: after.map { ($0.name, $0.metadata.inode) })
        #expect(names.allSatisfy { now[$0] != old[$0] })
        // The first batch's 8 copies, and one for each file the batches before the last
        // replaced that lay in more than one piece: the 4 made so, and any the disk's free
        // space split (a CI run counted 13 new files). The others take the next batch's copies.
        // By birth time: ext4 hands a freed inode number to the next new file.
        let split = files.filter { names.prefix(24).contains($0.name) && $0.extents != 1 }
            .map(\.name)
        let fresh = after.filter { names.contains($0.name) && $0.metadata.birth ?? 0 > born }
        #expect(fresh.count == 8 + split.count, "\(fresh.count) new files; in pieces: \(split)")
        let made = names.prefix(24).filter(twoPiece.contains).count
        #expect(split.count < made + 4, "the disk split \(split.count - made) of the \(24 - made) files this test left whole")
        let layout = Dictionary(uniqueKeysWithValues: after.map { ($0.name, $0.extents) })
        #expect(names.filter { layout[$0] != 1 } == [], "re-created files in more than one piece")
        #expect(layout[left] == (twoPiece.contains(left) ? 2 : 1), "a file not re-created keeps its layout")
    }
}
