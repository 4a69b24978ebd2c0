import DotSafeTestSupport
import Foundation
import Testing

/// A long sequential read streams through the daemon's chunk cache instead of filling it
/// (`ChunkStore.dropRead`; docs/PERFORMANCE.md, "A sequential read streams through the
/// cache"): the kernel's page cache holds what was read, so the daemon need not.
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

    /// Writes a 96 MiB file, mounts again (cold), runs `reader` (which prints the file's
    /// sha256sum line) and checks what it read and how far the daemon's memory grew meanwhile.
    static func readColdAndMeasure(reader: String) throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("head -c 96M /dev/urandom > ../big.source && cp ../big.source big.bin && sha256sum < ../big.source > ../big.sha",
             in: vault)
        #expect(h.lock(vault).status == 0)
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        let pid = try #require(MountHarness.daemonPID(for: vault))
        let before = try QuietDaemonTests.status(pid, "VmRSS")
        #expect(h.sh("\(reader) | cmp - ../big.sha", in: vault).status == 0, "the read gave other bytes")
        let peak = try QuietDaemonTests.status(pid, "VmHWM")
        // With the mount's cache of 256 MiB, every chunk read stayed: 96 MiB more.
        #expect(peak - before < 32 << 10, "resident \(before) KiB before the read, at most \(peak) KiB during it")
        #expect(h.lock(vault).status == 0)
    }
}
