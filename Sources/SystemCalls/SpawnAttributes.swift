import Glibc

/// A spawned program starts with every signal at its default action and none blocked. The
/// mount daemon ignores the signals it turns into a lock (and SIGPIPE), and an ignored signal
/// is inherited through exec: without this, a child of the daemon could not be ended by
/// SIGTERM, and a shell pipeline's writer would not end with SIGPIPE.
///
/// `ownSession`: the program leads a new session (setsid), so also a process group of its own
/// that a stop signals as a whole (`RunningChildren`), whatever it forks; and it has no
/// controlling terminal, whose job control would stop it (SIGTTIN) at a read from the
/// terminal, unseen, while this process holds the foreground: a prompt there fails at once
/// instead (`/dev/tty` does not open). Tests start a program on a terminal of its own with it.
public enum SpawnAttributes {
    /// glibc's POSIX_SPAWN_SETSID (2.26), which spawn.h declares only under _GNU_SOURCE.
    private static let setSession: Int32 = 0x80

    public static func withDefaultSignals<R>(ownSession: Bool = false, _ body: (UnsafePointer<posix_spawnattr_t>) -> R) -> R {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var every = sigset_t(), none = sigset_t()
        sigfillset(&every)
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &every)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | (ownSession ? setSession : 0)))
        return body(&attributes)
    }
}
