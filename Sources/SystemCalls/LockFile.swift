import Glibc

/// An exclusive `flock` on a file in a private folder, held for the life of the process (or
/// until `release`). Each holder makes the file anew and removes it when it lets go, so the
/// inode that /proc/locks shows is different at every mount and names nothing (R-DEN-4).
public final class LockFile: Sendable {
    public let path: String
    private let descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    /// Takes the lock; nil when another process holds it.
    public static func take(_ path: String) throws(SystemError) -> LockFile? {
        while true {
            let fd = try SystemCall.open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK, mode: 0o600)
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                let code = errno
                SystemCall.close(fd)
                if code == EWOULDBLOCK { return nil }
                if code == EINTR { continue }
                throw SystemError("flock \(path)", code)
            }
            // The holder before us may have removed the file between our open and our flock:
            // then we hold a lock on a file nobody else can find. Start again with the new one.
            let held = try SystemCall.status(fd)
            if let named = try SystemCall.status(path), named.inode == held.inode, named.device == held.device {
                return LockFile(path: path, descriptor: fd)
            }
            SystemCall.close(fd)
        }
    }

    /// Removes the file while still holding the lock, then lets go. The next holder makes a new one.
    public func release() {
        _ = Glibc.unlink(path)
        SystemCall.close(descriptor)
    }
}
