import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// A daemon that has gone quiet gives back what it kept for the next burst of work: the chunk
/// cache's ready frames, the storage's unnamed files opened ahead and the heap's freed pages (docs/PERFORMANCE.md, "A quiet daemon gives
/// memory back"), and the vault's bytes are as they were.
@Suite struct QuietDaemonTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    @Test func aQuietDaemonGivesBackTheMemoryItKeptReady() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        // Written behind and synced, the chunks leave the cache: their frames are free, and the
        // pool keeps up to 32 of them (8 MiB) ready for the next write. Nothing reads the file
        // back before the look, or its chunks would be in the cache, in use. Not all 8 MiB are
        // resident: a region is mapped whole, and its frames beyond RLIMIT_MEMLOCK are faulted
        // in only once written, so the quiet daemon gives back 5 to 8 MiB (6.2 here, 5.5 on a
        // CI run); without the release, the heap's trim alone gives back 0.2 MiB.
        h.sh("""
            head -c 48M /dev/urandom > ../big.source && sha256sum < ../big.source > ../big.sha
            dd if=../big.source of=big.bin bs=1M status=none conv=fsync
            """, in: vault)
        let pid = try #require(MountHarness.daemonPID(for: vault))
        let busy = try Self.status(pid, "RssAnon")
        // The write's new groups took unnamed files the storage opened ahead, and it keeps
        // some ready (docs/PERFORMANCE.md, "Unnamed files opened ahead").
        let ready = try unnamedFilesOpen(in: h.storage, pid: pid)
        #expect(ready > 0, "no unnamed file kept ready after a write of new groups")
        var quiet = busy
        // Ten seconds without a request, then the daemon's one-second look.
        for _ in 0..<30 {
            sleep(1)
            quiet = try Self.status(pid, "RssAnon")
            let open = try unnamedFilesOpen(in: h.storage, pid: pid)
            if busy - quiet >= 4 << 10 && open == 0 { break }
        }
        let locked = try Self.status(pid, "VmLck")
        #expect(busy - quiet >= 4 << 10, "anonymous memory \(busy) KiB after the write, \(quiet) KiB once quiet (locked: \(locked) KiB)")
        #expect(try unnamedFilesOpen(in: h.storage, pid: pid) == 0, "\(ready) unnamed files after the write, some still open once quiet")
        h.sh("sha256sum < big.bin | cmp - ../big.sha && dd if=/dev/urandom of=more.bin bs=1M count=8 status=none conv=fsync",
             in: vault)
        #expect(h.lock(vault).status == 0)
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("sha256sum < big.bin | cmp - ../big.sha && test $(stat -c %s more.bin) = 8388608", in: vault)
        #expect(h.lock(vault).status == 0)
    }

    /// A `/proc/PID/status` figure in KiB.
    static func status(_ pid: Int32, _ key: String) throws -> Int {
        let status = try readProcFile("/proc/\(pid)/status")
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(key + ":") })
        return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }
}
