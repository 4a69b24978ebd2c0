import CSystem
import Glibc

/// Process-wide protections for a daemon that holds keys for hours.
public enum ProcessHygiene {
    /// Makes the process non-dumpable: no core file, and other processes of the same user can no
    /// longer `ptrace` it or read its `/proc/<pid>/mem`. `MADV_DONTDUMP` covers only key pages;
    /// this covers plaintext in caches and buffers too. And a fault ends it as the kernel's
    /// default does, with no report: Swift's backtracer (in a build that has it) catches the
    /// fault signals and prints every register and the 16 bytes it points at to standard error,
    /// a terminal or, for `mount -f` under systemd, the journal (`CrashReportTests` saw a file's
    /// bytes there), and then left the daemon hung, mounted. Call it first thing in a command
    /// that holds keys. prctl(PR_SET_DUMPABLE, 0) via the shim's dotsafe_set_not_dumpable();
    /// throws on failure.
    public static func disableMemoryDumps() throws {
        guard dotsafe_set_not_dumpable() == 0 else {
            throw CryptoError.library("prctl(PR_SET_DUMPABLE): errno \(errno)")
        }
        // Unblocked too (a mask is inherited through exec): a fault the CPU raises is delivered
        // anyway, but a SIGABRT sent by `kill` to a process started with it blocked waited.
        var faults = sigset_t()
        sigemptyset(&faults)
        for number in faultSignals {
            signal(number, SIG_DFL)
            sigaddset(&faults, number)
        }
        pthread_sigmask(SIG_UNBLOCK, &faults, nil)
    }

    /// The signals that report a fault of this process (and SIGQUIT), whose default action
    /// dumps core: what a crash reporter catches.
    static let faultSignals = [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS, SIGQUIT]

    /// Whether the kernel would still write a core dump of this process (`PR_GET_DUMPABLE` != 0).
    public static var isDumpable: Bool {
        dotsafe_is_dumpable() != 0
    }
}
