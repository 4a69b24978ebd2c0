import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// What the mount daemon tells the system log (R-INT-3), caught on a socket of the test's own
/// (DOTSAFE_LOG_SOCKET stands in for /dev/log): nothing for an ordinary mount, write and lock;
/// a full disk once, with the mount point and nothing else of the vault, and once more when
/// writing works again.
@Suite struct SystemLogTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    @Test(.enabled(if: getuid() == 0, "a small disk needs root to mount a tmpfs"))
    func onlyFailuresAreLoggedWithTheMountPointAlone() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let disk = try h.mountPoint("disk")
        try #require(CommandResult.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=48m,mode=0755", "dotsafe-test-disk", disk]).succeeded)
        defer { _ = CommandResult.run("/usr/bin/umount", ["-l", disk]) }
        let storage = disk + "/storage-\(UUID().uuidString.prefix(8))"
        let vault = try h.mountPoint("vault")
        let log = try DatagramListener(name: h.base + "/log")
        var environment = h.environment
        environment["DOTSAFE_LOG_SOCKET"] = log.name
        func dotsafe(_ arguments: [String], input: String? = nil) -> CommandResult {
            CommandResult.run(MountHarness.binary, arguments, input: input, environment: environment)
        }
        try #require(dotsafe(["init", storage]).succeeded)
        defer { if MountHarness.isMounted(vault) { _ = dotsafe(["lock", vault]) } }

        // An ordinary session: no line at all.
        try #require(dotsafe(["mount", storage, vault, "--pattern-stdin"], input: Self.pattern + "\n").succeeded)
        h.sh("head -c 300000 /dev/urandom > kept.bin && sync kept.bin", in: vault)
        #expect(dotsafe(["lock", vault]).succeeded)
        #expect(log.receive(seconds: 2) == nil)

        // A full disk: the failed commit is logged once, then its recovery.
        try #require(dotsafe(["mount", storage, vault, "--pattern-stdin"], input: Self.pattern + "\n").succeeded)
        let pid = try #require(MountHarness.daemonPID(for: vault))
        let filled = h.sh("dd if=/dev/zero of=secret-name.bin bs=1M count=100 conv=fsync status=none", in: vault, expectFailure: true)
        #expect(filled.error.contains("No space left on device"), "\(filled)")
        let full = log.receive()
        #expect(full == "<11>dotsafe[\(pid)]: \(vault): the disk that holds the storage is full: changes stay in memory and are retried")
        h.sh("rm secret-name.bin && sync .", in: vault)
        #expect(log.receive() == "<12>dotsafe[\(pid)]: \(vault): changes are written again")
        #expect(dotsafe(["lock", vault]).succeeded)
        #expect(log.receive(seconds: 2) == nil, "one line per failure, not one per retry")
        for line in [full ?? ""] {
            #expect(!line.contains(storage) && !line.contains("secret-name") && !line.contains("kept"))
        }
    }
}
