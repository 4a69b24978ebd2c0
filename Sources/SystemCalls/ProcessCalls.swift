import CSystem
import Glibc
import Synchronization

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
            SpawnAttributes.withDefaultSignals { posix_spawnp(&pid, program, nil, $0, argv.baseAddress!, environ) }
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

    /// Runs `body` with standard error going to a file in memory, then puts it back: what
    /// `body` and the programs it starts wrote there (fusermount3's reason for refusing a mount,
    /// which a daemon's /dev/null would swallow). A program still running keeps writing into
    /// that file, never into a pipe nobody reads (no SIGPIPE for it). The text is nil when
    /// standard error could not be moved (then `body` runs with it as it was).
    ///
    /// Descriptor 2 is the process's, so the text also holds what other threads wrote meanwhile,
    /// and captures take turns: two that overlapped would each save the other's file as the one
    /// to put back, and leave descriptor 2 on a memory file for good (a test process mounts
    /// several vaults at once).
    public static func capturingStandardError<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> (result: R, text: String?) {
        var outcome: Result<(result: R, text: String?), E>!
        capturing.withLock { _ in outcome = Result { () throws(E) in try capturingStandardErrorAlone(body) } }
        return try outcome.get()
    }

    private static let capturing = Mutex(())

    private static func capturingStandardErrorAlone<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> (result: R, text: String?) {
        let file = dotsafe_memory_file("dotsafe-stderr")
        guard file >= 0 else { return (try body(), nil) }
        defer { SystemCall.close(file) }
        // Appending: a memory file's offset is not kept atomic between writers (unlike a file
        // opened by path), so two threads writing at once wrote over each other's text.
        guard fcntl(file, F_SETFL, O_APPEND) == 0 else { return (try body(), nil) }
        let saved = fcntl(2, F_DUPFD_CLOEXEC, 3)
        guard saved >= 0, dup2(file, 2) == 2 else {
            if saved >= 0 { SystemCall.close(saved) }
            return (try body(), nil)
        }
        let result: R
        do { result = try body() } catch {
            _ = dup2(saved, 2)
            SystemCall.close(saved)
            throw error
        }
        _ = dup2(saved, 2)
        SystemCall.close(saved)
        var text: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var offset: off_t = 0
        while text.count < 1 << 16 {
            let count = buffer.withUnsafeMutableBytes { pread(file, $0.baseAddress, $0.count, offset) }
            guard count > 0 else { break }
            text += buffer[..<count]
            offset += off_t(count)
        }
        return (result, String(decoding: text, as: UTF8.self))
    }

    /// Limits glibc's malloc to `count` arenas (M_ARENA_MAX).
    public static func limitMallocArenas(_ count: Int32) { _ = dotsafe_limit_malloc_arenas(count) }

    /// Gives the pages of freed heap memory back to the system (malloc_trim): glibc keeps them
    /// otherwise, counted in the process's RSS, until its heap shrinks from the top.
    public static func trimMalloc() { _ = dotsafe_trim_malloc() }

    /// Whether a process with this id exists (it may belong to another user).
    public static func exists(_ pid: pid_t) -> Bool { kill(pid, 0) == 0 || errno == EPERM }
}

extension ProcessCalls {
    /// How a program ended.
    public enum Termination: Equatable, Sendable {
        case exited(Int32)
        case signalled(Int32)
    }

    /// Runs `/bin/sh -c command` with its standard output read into `buffer` (standard input and
    /// error stay the caller's, so the command may ask on the terminal) and waits for it. Reads
    /// at most `buffer.count` bytes: a command that prints more is cut off (it then gets SIGPIPE).
    /// The bytes go straight into the caller's memory, never through a `String` or `Data`.
    public static func runShell(_ command: String, output buffer: UnsafeMutableRawBufferPointer)
        throws(SystemError) -> (count: Int, termination: Termination) {
        var ends: [Int32] = [0, 0]
        try SystemCall.retrying("pipe") { pipe(&ends) }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copy: only standard output stays open in the child.
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        let words: [String] = ["/bin/sh", "-c", command]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = argv.withUnsafeBufferPointer { argv in
            SpawnAttributes.withDefaultSignals { posix_spawn(&pid, "/bin/sh", &actions, $0, argv.baseAddress!, environ) }
        }
        SystemCall.close(writeEnd)
        guard spawned == 0 else {
            SystemCall.close(readEnd)
            throw SystemError("posix_spawn /bin/sh", spawned)
        }
        let count = (try? SystemCall.readFully(readEnd, into: buffer)) ?? 0
        SystemCall.close(readEnd)
        var status: Int32 = 0
        try SystemCall.retrying("waitpid") { waitpid(pid, &status, 0) }
        let termination: Termination = (status & 0x7f) == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
        return (count, termination)
    }
}
