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
        let counts = try shell("""
            for n in \(list); do dd if=$n of=$n.old bs=\(Format.fileSize / 4096 * 4096) count=1 oflag=direct status=none; done
            for n in \(list); do tail -c \(Format.fileSize % 4096) $n >> $n.old; chmod 600 $n.old; done
            sync -f .
            for n in \(list); do mv $n.old $n; done
            filefrag \(list)
            """, in: storage)
        // "NAME: 2 extents found"
        return Set(counts.split(separator: "\n").compactMap { line in
            line.hasSuffix(": 2 extents found") ? String(line.prefix { $0 != ":" }) : nil
        })
    }

    static func contents(_ path: String) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: path) {
            result[name] = FileManager.default.contents(atPath: path + "/" + name) ?? Data()
        }
        return result
    }

    /// The scan counts every piece of a file, as `filefrag` does. From aeb5bc4 on it asked
    /// FIEMAP with room for one extent, where the kernel stops counting at one: every file
    /// looked like one piece, and the audit could not show `pieces`.
    @Test func theScanCountsEveryPiece() throws {
        let path = try TestFolder.make("pieces")
        defer { TestFolder.remove(path) }
        let storage = path + "/storage"
        try Storage.initialize(at: storage, random: SystemRandom())
        let names = try StorageScan.scan(storage).files.prefix(8).map(\.name)
        let twoPiece = try Self.makeTwoPiece(names, in: storage)
        try #require(twoPiece.count >= 6, "only \(twoPiece.count) of 8 files lie in two pieces")
        let scan = try StorageScan.scan(storage)
        #expect(Set(scan.files.filter { $0.extents == 2 }.map(\.name)) == twoPiece)
        #expect(scan.files.allSatisfy { $0.extents == (twoPiece.contains($0.name) ? 2 : 1) && $0.firstBlock != nil })
        let extents = MetadataAudit(scan: scan).fields.first { $0.feature == .extents }
        #expect(extents?.verdict == .pieces, "\(String(describing: extents?.detail))")
    }
}
