import Glibc

/// A spawned program starts with every signal at its default action and none blocked. The
/// mount daemon ignores the signals it turns into a lock (and SIGPIPE), and an ignored signal
/// is inherited through exec: without this, a child of the daemon could not be ended by
/// SIGTERM, and a shell pipeline's writer would not end with SIGPIPE.
enum SpawnAttributes {
    static func withDefaultSignals<R>(_ body: (UnsafePointer<posix_spawnattr_t>) -> R) -> R {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var every = sigset_t(), none = sigset_t()
        sigfillset(&every)
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &every)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        return body(&attributes)
    }
}
