import CSystem
import Glibc

/// Process-level calls of the CLI and its mount daemon: running a helper program such as
/// `fusermount3` and waiting for it, starting a session, detaching the standard streams.
public enum ProcessCalls {
    /// Runs `program` (looked up on PATH unless it has a slash) with `arguments` and waits for
    /// it; its exit status, or -1 if it could not start or was killed by a signal.
    public static func run(_ program: String, _ arguments: [String]) -> Int32 {
        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = argv.withUnsafeBufferPointer { argv in
            posix_spawnp(&pid, program, nil, nil, argv.baseAddress!, environ)
        }
        guard spawned == 0 else { return -1 }
        var status: Int32 = 0
        guard (try? SystemCall.retrying("waitpid") { waitpid(pid, &status, 0) }) != nil else { return -1 }
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
    }

    /// Leaves the terminal's session, so that its hangup does not reach a daemon.
    public static func startSession() { _ = setsid() }

    /// Points standard input, output and error at /dev/null (a daemon after it reported ready).
    public static func detachStandardStreams() {
        guard let null = try? SystemCall.open("/dev/null", O_RDWR) else { return }
        for descriptor: Int32 in [0, 1, 2] { _ = try? SystemCall.retrying("dup2") { dup2(null, descriptor) } }
        if null > 2 { SystemCall.close(null) }
    }

    /// Limits glibc's malloc to `count` arenas (M_ARENA_MAX).
    public static func limitMallocArenas(_ count: Int32) { _ = dotsafe_limit_malloc_arenas(count) }

    /// Whether a process with this id exists (it may belong to another user).
    public static func exists(_ pid: pid_t) -> Bool { kill(pid, 0) == 0 || errno == EPERM }
}
