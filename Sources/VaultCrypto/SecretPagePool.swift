import Synchronization

/// Keeps a few zeroed, locked single-page mappings for reuse by small `SecretBytes`.
///
/// Mapping, advising and locking a fresh page and unlocking and unmapping it afterwards is six
/// system calls, about 8 µs, which is more than the HKDF call that fills it: with one derived key
/// per 256 KiB chunk that alone would cost some 13 % of the encryption time. A recycled page keeps
/// its `MADV_DONTDUMP`, `MADV_WIPEONFORK` and `mlock` state and is cleansed before it goes back, so
/// a secret's bytes are still zeroed the moment its owner goes away; only the unmapping is deferred.
/// The pool is bounded (256 KiB locked) so it cannot eat RLIMIT_MEMLOCK; pages beyond that are
/// unmapped as before.
final class SecretPagePool: Sendable {
    static let shared = SecretPagePool(capacity: 64)

    let capacity: Int
    private let idle: Mutex<[LockedPages]>

    init(capacity: Int) {
        self.capacity = capacity
        idle = Mutex([])
    }

    /// A zeroed single-page mapping, recycled if one is idle.
    func take() throws -> LockedPages {
        if let recycled = idle.withLock({ $0.popLast() }) { return recycled }
        return try LockedPages(byteCount: LockedPages.pageSize)
    }

    /// Zeroes `pages` and keeps it for reuse, or lets it be unmapped if the pool is full.
    func recycle(_ pages: LockedPages) {
        pages.cleanse()
        let spare: LockedPages? = idle.withLock { idle in
            guard idle.count < capacity else { return pages }
            idle.append(pages)
            return nil
        }
        _ = spare  // released here, outside the lock: its deinit unmaps
    }

    /// Number of pages waiting for reuse.
    var idleCount: Int { idle.withLock { $0.count } }
}
