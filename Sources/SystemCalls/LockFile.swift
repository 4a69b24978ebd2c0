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

    /// Replaces the file's text: a word for whoever finds the lock held ("mounted at …").
    public func note(_ text: String) {
        _ = ftruncate(descriptor, 0)
        var bytes = Array(text.utf8)
        _ = pwrite(descriptor, &bytes, bytes.count, 0)
    }

    /// The note of the lock file at `path`, if it has one.
    public static func note(at path: String) -> String? {
        guard let fd = try? SystemCall.open(path, O_RDONLY | O_NOFOLLOW) else { return nil }
        defer { SystemCall.close(fd) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = pread(fd, &bytes, bytes.count, 0)
        return count > 0 ? String(decoding: bytes[0..<count], as: UTF8.self) : nil
    }

    /// Removes the file while still holding the lock, then lets go. The next holder makes a new one.
    public func release() {
        _ = Glibc.unlink(path)
        SystemCall.close(descriptor)
    }
}
