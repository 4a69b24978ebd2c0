import DotSafeTestSupport
import Foundation
import Testing
import VaultFormat
import VaultStore

/// R-DEN-1 on the disk's own map: how many pieces (extents) a file's blocks lie in is read by
/// anyone who can open the file (FIEMAP, `filefrag`) or image the disk. `init`'s covers, written
/// through the page cache, lie in one piece each; a streamed write's chunk files, written past it
/// (their whole pages at once, their last 48 bytes at write-back), lay in two, until each file's
/// blocks were taken all at once first (`DirectIO.write`). Before that, a 32 MiB write left 50
/// of 256 files in two pieces, and `dotsafe audit` showed it.
@Suite struct StorageExtentsTests {
    @Test func aStreamedWriteLeavesEveryFileInOnePiece() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let point = try h.mountPoint()
        let covers = try StorageScan.scan(h.storage)
        try #require(covers.files.allSatisfy { $0.extents != nil }, "the tests' folder keeps no extent map (not ext4?)")
        #expect(Set(covers.files.map(\.extents)) == [1], "init's covers")

        // No re-creation at the lock: it would rewrite some files through the cache and hide
        // what the write itself left.
        try #require(h.mount(point, pattern: "b2-c2-d3-d4-c4-b4-a5", options: ["--recreate-budget", "0"]).status == 0)
        h.sh("dd if=/dev/urandom of=big bs=256K count=128 status=none && sha256sum big > ../big.sha", in: point)
        try #require(h.lock(point).status == 0)

        let scan = try StorageScan.scan(h.storage)
        #expect(scan.files.count >= covers.files.count + 128)
        let pieces = Dictionary(grouping: scan.files, by: { $0.extents ?? 0 }).mapValues(\.count)
        #expect(pieces.keys.sorted() == [1], "files by extent count: \(pieces)")

        let audit = h.dotsafe(["audit", h.storage])
        #expect(audit.status == 0, "\(audit)")
        let row = audit.output.split(separator: "\n").first { $0.hasPrefix("extents ") }
        #expect(row?.hasSuffix("hides: the same for every file") == true, "\(audit.output)")

        // The file reads back whole.
        try #require(h.mount(point, pattern: "b2-c2-d3-d4-c4-b4-a5").status == 0)
        #expect(h.sh("sha256sum -c ../big.sha", in: point).status == 0)
        try #require(h.lock(point).status == 0)
    }
}
