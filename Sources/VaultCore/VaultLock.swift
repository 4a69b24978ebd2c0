import Glibc
import Synchronization

/// The vault's one lock, around its state: glibc's adaptive mutex, not the standard library's
/// `Mutex`. On Linux `Mutex` is a priority-inheritance futex that spins 1,000 `pause`s before
/// it sleeps, and whose unlock hands the lock to the waiter it wakes. In the benchmark's two
/// writers and two readers (FUSE requests, loads ahead and write-behinds all waiting for this
/// lock, on two cores) that spin alone took 6.6 % of the daemon's samples. glibc's adaptive
/// mutex spins at most 100 times (its default), fewer as the lock proved quick to come free,
/// and whoever runs may take it: the daemon's CPU in those four jobs fell by a fifth. A mutex
/// that sleeps at once had slowed reading many small files; the adaptive one showed no such
/// loss in two series of three benchmark pairs, a small sample with a wide spread for the
/// write (docs/PERFORMANCE.md, "The vault's lock"). A second lock by the thread that holds it
/// stops the process, as with `Mutex`: never a silent deadlock.
///
/// The only pointer code of the lock: the mutex lives at one address for the lock's life.
final class VaultLock<Value>: @unchecked Sendable {
    // @unchecked: `value` is read and written only between lock and unlock.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The holder's `pthread_self`, 0 when free: equal to a thread's own only while it holds it.
    private let owner = Atomic<UInt>(0)
    private var value: Value

    init(_ value: consuming Value) {
        mutex = .allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        let made = pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        // fatalError, not precondition: an optimized build prints no precondition's message.
        if made != 0 { fatalError("pthread_mutex_init failed: \(made)") }
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        let me = pthread_self()
        if owner.load(ordering: .relaxed) == me { fatalError("the vault's lock taken twice by one thread") }
        let locked = pthread_mutex_lock(mutex)
        if locked != 0 { fatalError("pthread_mutex_lock failed: \(locked)") }
        return try held(by: me, body)
    }

    /// nil at once when another thread holds the lock.
    func withLockIfAvailable<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        return try held(by: pthread_self(), body)
    }

    private func held<R, E: Error>(by me: UInt, _ body: (inout Value) throws(E) -> R) throws(E) -> R {
        owner.store(me, ordering: .relaxed)
        defer {
            owner.store(0, ordering: .relaxed)
            pthread_mutex_unlock(mutex)
        }
        return try body(&value)
    }
}
