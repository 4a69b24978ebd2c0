import DotSafeTestSupport
import Foundation
import Testing

/// A long sequential read streams through the daemon's chunk cache instead of filling it
/// (`ChunkStore.dropRead`; docs/PERFORMANCE.md, "A sequential read streams through the
/// cache"): the kernel's page cache holds what was read, so the daemon need not.
@Suite struct StreamingReadMemoryTests {
    static let pattern = "b3-c3-d3-d4-c4-b4-a4"

    @Test func aColdReadOfALargeFileLeavesTheDaemonSmall() throws {
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
        h.sh("sha256sum < big.bin | cmp - ../big.sha", in: vault)
        let peak = try QuietDaemonTests.status(pid, "VmHWM")
        // With the mount's cache of 256 MiB, every chunk read stayed: 96 MiB more.
        #expect(peak - before < 32 << 10, "resident \(before) KiB before the read, at most \(peak) KiB during it")
        #expect(h.lock(vault).status == 0)
    }
}
