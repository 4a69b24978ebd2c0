import Glibc
import Synchronization

/// A `flock` on a folder itself: held shared by each process that uses the folder, and taken
/// exclusive, without waiting, by one that wants to know it is alone in it (to remove what the
/// others left, or the folder). flock belongs to the open folder, so two opens in one process
/// are two holders. Released at `release()` or when the last reference goes.
public final class FolderLock: Sendable {
    public let path: String
    private let open: Atomic<Int32>
    private var descriptor: Int32 { open.load(ordering: .relaxed) }

    private init(path: String, descriptor: Int32) {
        self.path = path
        open = Atomic(descriptor)
    }

    /// Opens the folder at `path` and locks it shared, waiting while someone holds it exclusive;
    /// nil when the folder was removed or replaced meanwhile (make it again and retry).
    public static func share(_ path: String) throws(SystemError) -> FolderLock? {
        let fd = try SystemCall.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        let lock = FolderLock(path: path, descriptor: fd)
        try SystemCall.retrying("flock \(path)") { flock(fd, LOCK_SH) }
        return try lock.isStillNamed() ? lock : nil
    }

    /// Turns the lock exclusive if no other holder has the folder; true then. Linux drops the
    /// shared lock first, so after false this holds nothing: release it.
    public func takeAlone() -> Bool { flock(descriptor, LOCK_EX | LOCK_NB) == 0 }

    /// Turns an exclusive lock back into a shared one; false when the folder was removed or
    /// replaced in the moment between (then release it and start again).
    public func shareAgain() throws(SystemError) -> Bool {
        try SystemCall.retrying("flock \(path)") { flock(descriptor, LOCK_SH) }
        return try isStillNamed()
    }

    /// Closes the folder (once, whoever calls first), which drops the lock.
    public func release() {
        let descriptor = open.exchange(-1, ordering: .relaxed)
        if descriptor >= 0 { SystemCall.close(descriptor) }
    }

    deinit { release() }

    private func isStillNamed() throws(SystemError) -> Bool {
        let held = try SystemCall.status(descriptor)
        guard let named = try SystemCall.status(path) else { return false }
        return named.isFolder && named.inode == held.inode && named.device == held.device
    }
}
