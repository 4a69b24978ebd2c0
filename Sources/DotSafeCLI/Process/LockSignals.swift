import Dispatch
import Glibc

/// The signals that lock a mount. Any signal whose default action ends the process would
/// otherwise end the daemon without its final commit, losing the last seconds of writes: so
/// each of them (SIGUSR1, SIGALRM, SIGQUIT, a real-time signal, ...) locks as SIGTERM does.
/// SIGPIPE is ignored: a write to a reader that went away fails with EPIPE instead.
///
/// Left out: SIGKILL and SIGSTOP cannot be caught; SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
/// SIGSYS and SIGABRT report a fault of this process, after which no commit can be trusted.
enum LockSignals {
    static let ignored: [Int32] = [SIGPIPE]

    /// Every catchable, asynchronous signal whose default action terminates (signal(7)).
    static var locking: [Int32] {
        [SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGTERM, SIGSTKFLT, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF,
         SIGIO, SIGPWR] + Array(__libc_current_sigrtmin()...__libc_current_sigrtmax())
    }

    /// Runs `lock` on a background queue at each of `locking`, and ignores `ignored`. Keep the
    /// sources: cancelling (or dropping) one stops its signal from locking.
    static func watch(_ lock: @escaping @Sendable () -> Void) -> [any DispatchSourceSignal] {
        for number in ignored { signal(number, SIG_IGN) }
        return locking.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: lock)
            source.resume()
            return source
        }
    }
}
