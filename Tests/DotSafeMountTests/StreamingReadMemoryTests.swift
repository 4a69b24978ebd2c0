import DotSafeTestSupport
import Foundation
import Testing

/// A long sequential read streams through the daemon's chunk cache instead of filling it
/// (`ChunkStore.dropRead`; docs/PERFORMANCE.md, "A sequential read streams through the
/// cache"), and small files read whole do not stay in it: the kernel's page cache holds what
/// was read, so the daemon need not.
@Suite struct StreamingReadMemoryTests {
    static let pattern = "b3-c3-d3-d4-c4-b4-a4"

    @Test func aColdReadOfALargeFileLeavesTheDaemonSmall() throws {
        try Self.readColdAndMeasure(reader: "sha256sum < big.bin")
    }

    /// A reader that tells the kernel it reads in order (`POSIX_FADV_SEQUENTIAL`, as fio does)
    /// gets twice the read-ahead: the kernel then asks for a whole chunk per request, and the
    /// daemon never finds the chunk of a request cached (before, it grew by 98 MiB here).
    @Test func aReaderAskingForWholeChunksLeavesTheDaemonSmall() throws {
        try Self.readColdAndMeasure(reader: """
            python3 -c '
            import hashlib, os, sys
            fd = os.open("big.bin", os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
            digest = hashlib.sha256()
            while block := os.read(fd, 1 << 20): digest.update(block)
            print(digest.hexdigest() + "  -")'
            """)
    }

    /// A small file is pushed whole into the kernel's page cache at its open, which then keeps
    /// it: the daemon keeps no copy (`ChunkStore.dropPushed`; reading every file of the
    /// benchmark's tree left it at 202 MiB, the tree decrypted a second time). 1,536 files of
    /// 32 KiB, 48 MiB, each a pack member; read twice, the second time from the kernel's cache.
    @Test func readingEverySmallFileLeavesTheDaemonSmall() throws {
        try Self.readColdAndMeasure(writing: """
            mkdir ../source && python3 -c '
            import os
            for i in range(1536): open(f"../source/f{i:04}", "wb").write(os.urandom(32768))' \
            && cp -r ../source small
            """, reader: "cat small/* | sha256sum", again: true, growthKiB: 16 << 10)
    }

    /// Writes a 96 MiB file (or runs `writing`, which makes `../source` and its copy in the
    /// vault), mounts again (cold), runs `reader` (which prints the sha256sum line of what it
    /// read), twice if `again`, and checks what it read and how far the daemon's memory grew.
    static func readColdAndMeasure(writing: String = "head -c 96M /dev/urandom > ../source && cp ../source big.bin",
                                   reader: String, again: Bool = false, growthKiB: Int = 32 << 10) throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("\(writing) && cat $(find ../source -type f | sort) | sha256sum > ../source.sha", in: vault)
        #expect(h.lock(vault).status == 0)
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        let pid = try #require(MountHarness.daemonPID(for: vault))
        let before = try QuietDaemonTests.status(pid, "VmRSS")
        for _ in 0..<(again ? 2 : 1) {
            #expect(h.sh("\(reader) | cmp - ../source.sha", in: vault).status == 0, "the read gave other bytes")
        }
        let peak = try QuietDaemonTests.status(pid, "VmHWM")
        // With the mount's cache of 256 MiB, everything read stayed: 96 MiB more, 48 for the
        // small files (each in a block of 64 KiB: 99 MiB more).
        #expect(peak - before < growthKiB, "resident \(before) KiB before the read, at most \(peak) KiB during it")
        #expect(h.lock(vault).status == 0)
    }
}
