import CSystem
import Dispatch
import Glibc
import Synchronization

/// SIGINT, SIGTERM and SIGHUP as a request to stop at the next safe point (`dotsafe sync`),
/// instead of the default action that ends the process wherever it is. While `watching` runs:
/// the first of them is remembered (`caught`) and every helper program running or started
/// afterwards gets SIGTERM, and SIGKILL `ChildProcess.stopGraceSeconds` later if it is still
/// running (`RunningChildren`); the caller notices at its next step and winds down, at most
/// that grace after the signal when a child holds it. A second one means "now": the children
/// get SIGKILL and the process exits at once with 128 + the signal, as a kill would have ended
/// it (the crash-safe path). The children run in sessions of their own, so a terminal's Ctrl-C
/// or hangup reaches this process alone: these signals to them, to each one's whole process
/// group, are how it reaches them.
///
/// The handler only sets an atomic and writes one byte into a pipe (both async-signal-safe); a
/// thread blocked reading the pipe does the rest outside signal context. Not a dispatch read
/// source: tearing one down races libdispatch's epoll bookkeeping on Linux, which once crashed
/// a sync on its way out (swift-corelibs-libdispatch issue 949). A pattern prompt (`Terminal`)
/// puts its own handlers in place while it reads and ours back after it.
public enum StopSignals {
    public static let numbers: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// The first signal caught while watching, or nil.
    public static var caught: Int32? {
        let number = Handler.caught.load(ordering: .acquiring)
        return number == 0 ? nil : number
    }

    /// `SIGINT`, `SIGTERM`, `SIGHUP`.
    public static func name(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGHUP: "SIGHUP"
        default: "signal \(number)"
        }
    }

    /// Runs `body` with the signals watched. Nested and concurrent calls (commands run inside a
    /// test process) share one installation, removed when the last of them ends; `caught` is
    /// cleared then.
    public static func watching<R>(_ body: () throws -> R) throws -> R {
        try installation.withLock { try $0.enter() }
        // The signals must reach this process: a parent may have left them blocked (a test
        // runner's threads block SIGTERM, and a child inherits that mask).
        var unblocked = sigset_t(), previousMask = sigset_t()
        sigemptyset(&unblocked)
        for number in numbers { sigaddset(&unblocked, number) }
        pthread_sigmask(SIG_UNBLOCK, &unblocked, &previousMask)
        defer {
            pthread_sigmask(SIG_SETMASK, &previousMask, nil)
            installation.withLock { $0.leave() }
        }
        return try body()
    }

    private static let installation = Mutex(Installation())

    private struct Installation: ~Copyable {
        var users = 0
        var readEnd: Int32 = -1
        var writeEnd: Int32 = -1
        var readerDone: DispatchSemaphore?
        var previous: [sigaction] = []

        mutating func enter() throws(SystemError) {
            users += 1
            guard users == 1 else { return }
            var ends: [Int32] = [0, 0]
            do { try SystemCall.retrying("pipe2") { dotsafe_pipe_cloexec(&ends) } } catch {
                users = 0
                throw error
            }
            (readEnd, writeEnd) = (ends[0], ends[1])
            // The handler must never block; the reader does, until a byte comes.
            _ = fcntl(writeEnd, F_SETFL, fcntl(writeEnd, F_GETFL) | O_NONBLOCK)
            // Both atomics exist before the handler can run (a static is made at its first use).
            Handler.caught.store(0, ordering: .releasing)
            Handler.pipe.store(writeEnd, ordering: .releasing)
            let done = DispatchSemaphore(value: 0)
            readerDone = done
            DispatchQueue.global().async { [readEnd] in
                Handler.readUntilEnd(readEnd)
                done.signal()
            }
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { Handler.handle($0) }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            previous = StopSignals.numbers.map { number in
                var old = sigaction()
                sigaction(number, &action, &old)
                return old
            }
        }

        mutating func leave() {
            users -= 1
            guard users == 0 else { return }
            for (number, old) in zip(StopSignals.numbers, previous) {
                var old = old
                sigaction(number, &old, nil)
            }
            previous = []
            Handler.pipe.store(-1, ordering: .releasing)
            Handler.endReader(writeEnd)
            readerDone?.wait()
            readerDone = nil
            SystemCall.close(writeEnd)
            SystemCall.close(readEnd)
            (readEnd, writeEnd) = (-1, -1)
            Handler.caught.store(0, ordering: .releasing)
            Handler.seen.store(0, ordering: .relaxed)
            RunningChildren.resume()
        }
    }

    /// What the signal handler touches: two atomics, set up before it is installed.
    private enum Handler {
        static let caught = Atomic<Int32>(0)
        static let pipe = Atomic<Int32>(-1)
        /// Signals read from the pipe (by its one reader).
        static let seen = Atomic<Int>(0)

        /// In signal context: nothing but the two atomics and one write (errno kept).
        static func handle(_ number: Int32) {
            let saved = errno
            _ = caught.compareExchange(expected: 0, desired: number, ordering: .acquiringAndReleasing)
            var byte = UInt8(truncatingIfNeeded: number)
            _ = write(pipe.load(ordering: .acquiring), &byte, 1)
            errno = saved
        }

        /// The reader's loop: each byte is a signal, until the zero byte `endReader` writes.
        static func readUntilEnd(_ readEnd: Int32) {
            var bytes = [UInt8](repeating: 0, count: 16)
            while true {
                let count = read(readEnd, &bytes, bytes.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                for byte in bytes.prefix(count) {
                    if byte == 0 { return }
                    received(Int32(byte))
                }
            }
        }

        /// Asks the reader to end. The pipe holds 64 KiB, so it is full only while the reader
        /// is draining a storm of signals: then the zero byte waits its turn.
        static func endReader(_ writeEnd: Int32) {
            var end: UInt8 = 0
            while write(writeEnd, &end, 1) != 1 {
                guard errno == EAGAIN || errno == EINTR else { return }
                usleep(1_000)
            }
        }

        /// Outside signal context: the first signal stops the children, a second ends the process.
        static func received(_ number: Int32) {
            if seen.add(1, ordering: .relaxed).newValue == 1 {
                RunningChildren.stop(killingAfter: ChildProcess.stopGraceSeconds)
            } else {
                RunningChildren.stop(with: SIGKILL)
                _exit(128 + number)
            }
        }
    }
}
