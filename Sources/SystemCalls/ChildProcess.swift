import CSystem
import Glibc

/// Runs a helper program to completion with pipes on all three standard streams: what is given
/// goes to its standard input, and both outputs come back (the sync module's `rclone`).
public enum ChildProcess {
    public struct Result: Sendable {
        /// The exit status, or -1 when a signal ended the program.
        public var status: Int32
        public var output: [UInt8]
        public var errorOutput: [UInt8]
    }

    /// How long the child's group has after `run`'s own SIGTERM before SIGKILL. rclone
    /// ends within a fraction of a second of SIGTERM, and so does a wrapper that passes it on;
    /// 3 s leaves room for that on a loaded machine. A member of the group that ignores SIGTERM
    /// (or is stuck) and keeps an output open would otherwise hold the command forever, its
    /// outcome already decided by the stop; 3 s is all that costs.
    public static let stopGraceSeconds = 3

    /// Runs `path` (a path holding a slash, relative to the working folder unless it starts with
    /// one: the caller looks programs up, so that a missing one can be named) with `arguments`
    /// and exactly `environment` ("NAME=value" entries). With
    /// `privateFiles`, under umask 077: what it creates is its owner's alone. With
    /// `stopOnErrorOutput`, the first bytes on its standard error end it (SIGTERM): for a
    /// program that keeps going after a failure that already decides the outcome.
    /// `takingErrorLines` is offered each whole line of standard error first (without its
    /// newline): a line it takes (returns true for) is a report, such as a file done, and
    /// neither error output nor a reason to stop. `whenQuiet.goOn` is asked, each time
    /// `whenQuiet.seconds` pass with no line taken, whether the child should go on; a no ends
    /// it (SIGTERM): for a program whose silence may mean it is stuck retrying. Either of these
    /// stops is followed by SIGKILL `stopGraceSeconds` later while an output stays open. A stop
    /// (`StopSignals`) ends it too, with SIGKILL as long after. Each of these signals its whole
    /// process group (`RunningChildren`). It runs in a session of its own, without the terminal
    /// (`SpawnAttributes`); once it has exited and both outputs are closed, whatever it left
    /// running in its group gets SIGKILL: nothing of it outlives its command. Nor this process,
    /// however that ends (`lifeline`).
    public static func run(_ path: String, _ arguments: [String], environment: [String], privateFiles: Bool = false,
                           input: [UInt8] = [], stopOnErrorOutput: Bool = false,
                           takingErrorLines: ((String) -> Bool)? = nil,
                           whenQuiet: (seconds: Int, goOn: () -> Bool)? = nil) throws(SystemError) -> Result {
        ignoreBrokenPipes
        let lifeline = try Self.lifeline.get()
        let stdin = try makePipe(), stdout = try makePipe(), stderr = try makePipe()
        let pid: pid_t
        do {
            // The umask in the shell the program replaces: posix_spawn cannot set one.
            pid = try spawn("/bin/sh", ["-c", (privateFiles ? "umask 077\n" : "") + groupGuard, path] + arguments, environment,
                            streams: [stdin.read, stdout.write, stderr.write, lifeline.read])
        } catch {
            for descriptor in [stdin.read, stdin.write, stdout.read, stdout.write, stderr.read, stderr.write] {
                SystemCall.close(descriptor)
            }
            throw error
        }
        SystemCall.close(stdin.read); SystemCall.close(stdout.write); SystemCall.close(stderr.write)
        RunningChildren.started(pid)
        let (output, errorOutput) = exchange(input: input, stdin: stdin.write, stdout: stdout.read, stderr: stderr.read,
                                             child: pid, stopOnErrorOutput: stopOnErrorOutput, taking: takingErrorLines,
                                             whenQuiet: whenQuiet)
        // Not reaped yet, the child keeps its number, and so its group's, from being reused.
        var exited = siginfo_t()
        if (try? SystemCall.retrying("waitid") { waitid(P_PID, id_t(pid), &exited, WEXITED | WNOWAIT) }) != nil {
            RunningChildren.signal(pid, SIGKILL)
        }
        RunningChildren.ended(pid)
        var status: Int32 = 0
        _ = try SystemCall.retrying("waitpid") { waitpid(pid, &status, 0) }
        let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
        return Result(status: exit, output: output, errorOutput: errorOutput)
    }

    /// What ends a child's group when this process ends without a word, killed with SIGKILL
    /// (nothing runs in it then): the read end of a pipe whose write end only this process
    /// holds (close-on-exec), at end of file once this process is gone. Each child gets it as
    /// descriptor 3, and `groupGuard` runs in its group a watcher of it that sends SIGKILL to
    /// the group at that end of file. Weighed against the others: PR_SET_PDEATHSIG, set in the
    /// child (or by `setpriv --pdeathsig`), reaches the child alone, not what a wrapper forked,
    /// and fires when the thread that spawned it ends; rclone's standard input does not end
    /// it, as rclone does not watch it; a record of the group in the runtime folder for the
    /// next dotsafe to sweep leaves rclone writing to the remote or the storage until that
    /// next start, and by then the group's number may be another's.
    private static let lifeline = Swift.Result { () throws(SystemError) in try makePipe() }

    /// The shell line the program starts behind: in the background, a watcher of descriptor 3
    /// (`lifeline`), deaf to the stop signals (a stop's SIGKILL, or the one that follows the
    /// program's exit, ends it) and holding none of the program's streams, which would keep
    /// `exchange` waiting; then the program in the shell's place, as the group's leader,
    /// without descriptor 3. The watcher is started from a subshell that exits at once, so
    /// that it is not the program's child: a wrapper that waits for any child of its own
    /// (Python's `os.wait()`) would wait for it for ever.
    private static let groupGuard = """
        ( { trap '' HUP INT TERM; read -r line <&3; kill -KILL 0; } </dev/null >/dev/null 2>&1 & )
        exec "$0" "$@" 3<&-
        """

    /// A child that stops reading its input must not end this process with SIGPIPE: the write
    /// fails with EPIPE instead, and the child's exit status says what went wrong.
    private static let ignoreBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    private static func makePipe() throws(SystemError) -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        try SystemCall.retrying("pipe2") { dotsafe_pipe_cloexec(&ends) }
        return (ends[0], ends[1])
    }

    private static func spawn(_ path: String, _ arguments: [String], _ environment: [String],
                              streams: [Int32]) throws(SystemError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 onto 0 to 3 clears close-on-exec there. Every other descriptor closes: ours are
        // close-on-exec, but one this process inherited without it (a test runner's socket that
        // tells it when its child is gone) would pass to the helper and whatever it leaves.
        for (target, descriptor) in streams.enumerated() {
            posix_spawn_file_actions_adddup2(&actions, descriptor, Int32(target))
        }
        dotsafe_spawn_close_from(&actions, Int32(streams.count))
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var pid = pid_t()
        let code = argv.withUnsafeBufferPointer { argv in
            envp.withUnsafeBufferPointer { envp in
                SpawnAttributes.withDefaultSignals(ownSession: true) {
                    posix_spawn(&pid, path, &actions, $0, argv.baseAddress!, envp.baseAddress!)
                }
            }
        }
        guard code == 0 else { throw SystemError("spawn \(path)", code) }
        return pid
    }

    /// Feeds the input and drains both outputs together, so that no full pipe blocks the child.
    private static func exchange(input: [UInt8], stdin: Int32, stdout: Int32, stderr: Int32, child: pid_t,
                                 stopOnErrorOutput: Bool, taking: ((String) -> Bool)?,
                                 whenQuiet: (seconds: Int, goOn: () -> Bool)?) -> ([UInt8], [UInt8]) {
        var output: [UInt8] = [], errorOutput: [UInt8] = []
        // With `taking`, standard error waits here until its line is whole.
        var partialLine: [UInt8] = []
        let clock = ContinuousClock()
        var quietUntil = whenQuiet.map { clock.now + .seconds($0.seconds) }
        // This function's own stop: SIGTERM now, SIGKILL at `killAt` if an output is still open.
        var killAt: ContinuousClock.Instant?, stopped = false
        func stop() {
            RunningChildren.signal(child, SIGTERM)
            if !stopped { killAt = clock.now + .seconds(stopGraceSeconds) }
            stopped = true
        }
        func addErrorOutput(_ bytes: some Collection<UInt8>) {
            if stopOnErrorOutput && errorOutput.isEmpty { stop() }
            errorOutput.append(contentsOf: bytes)
        }
        var written = 0
        var inputOpen = true, outputOpen = true, errorOpen = true
        if input.isEmpty { SystemCall.close(stdin); inputOpen = false }
        else { _ = fcntl(stdin, F_SETFL, fcntl(stdin, F_GETFL) | O_NONBLOCK) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while inputOpen || outputOpen || errorOpen {
            var polled = [pollfd(fd: inputOpen ? stdin : -1, events: Int16(POLLOUT), revents: 0),
                          pollfd(fd: outputOpen ? stdout : -1, events: Int16(POLLIN), revents: 0),
                          pollfd(fd: errorOpen ? stderr : -1, events: Int16(POLLIN), revents: 0)]
            let wakeUp = [quietUntil, killAt].compactMap { $0 }.min()
            if poll(&polled, 3, wakeUp.map { milliseconds(clock.now.duration(to: $0)) } ?? -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            if let due = killAt, clock.now >= due {
                RunningChildren.signal(child, SIGKILL)
                killAt = nil
            }
            if let deadline = quietUntil, let whenQuiet, clock.now >= deadline {
                if whenQuiet.goOn() { quietUntil = clock.now + .seconds(whenQuiet.seconds) } else {
                    stop()
                    quietUntil = nil
                }
                continue
            }
            if inputOpen && polled[0].revents != 0 {
                let count = input.withUnsafeBytes { write(stdin, $0.baseAddress! + written, $0.count - written) }
                if count > 0 { written += count }
                if written == input.count || (count < 0 && errno != EAGAIN && errno != EINTR) {
                    SystemCall.close(stdin); inputOpen = false
                }
            }
            for (index, descriptor) in [(1, stdout), (2, stderr)] where polled[index].revents != 0 {
                let count = read(descriptor, &buffer, buffer.count)
                if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                if count <= 0 {
                    SystemCall.close(descriptor)
                    if index == 1 { outputOpen = false } else { errorOpen = false }
                    if index == 2 && !partialLine.isEmpty { addErrorOutput(partialLine) }
                } else if index == 1 {
                    output.append(contentsOf: buffer[0..<count])
                } else if let taking {
                    partialLine.append(contentsOf: buffer[0..<count])
                    while let end = partialLine.firstIndex(of: 0x0a) {
                        let line = partialLine[...end]
                        if taking(String(decoding: line.dropLast(), as: UTF8.self)) {
                            if let whenQuiet, quietUntil != nil { quietUntil = clock.now + .seconds(whenQuiet.seconds) }
                        } else {
                            addErrorOutput(line)
                        }
                        partialLine.removeSubrange(...end)
                    }
                } else {
                    addErrorOutput(buffer[0..<count])
                }
            }
        }
        return (output, errorOutput)
    }

    /// A poll timeout: whole milliseconds, rounded up so that the deadline has passed when poll
    /// returns, and never negative.
    private static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 && (seconds > 0 || attoseconds > 0) else { return 0 }
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}
