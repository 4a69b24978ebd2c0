import Glibc

/// Small files only their owner may read, such as the keyring: read with a permission check,
/// written atomically (temporary name in the same folder, synced, renamed, folder synced).
public enum PrivateFile {
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// The file can be read by others than its owner.
        case tooOpen(path: String, mode: UInt32)
        case notARegularFile(String)
        case system(path: String, operation: String, errno: Int32)

        public var description: String {
            switch self {
            case .tooOpen(let path, let mode):
                "\(path) can be read or written by others (mode \(String(mode, radix: 8))): run 'chmod 600 \(path)' if it is yours"
            case .notARegularFile(let path): "\(path) is not a regular file"
            case .system(let path, let operation, let code): "\(path): \(operation): \(String(cString: strerror(code)))"
            }
        }
    }

    /// The file's bytes, or nil if it does not exist. Refuses a file with group or other bits.
    public static func read(_ path: String) throws -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw Failure.system(path: path, operation: "open", errno: errno)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Failure.system(path: path, operation: "stat", errno: errno) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw Failure.notARegularFile(path) }
        let mode = UInt32(info.st_mode & 0o7777)
        guard mode & 0o077 == 0 else { throw Failure.tooOpen(path: path, mode: mode) }
        do {
            return try Syscalls.readFully(fd, count: Int(info.st_size), offset: 0)
        } catch let error as StoreError {
            throw Failure.system(path: path, operation: "read", errno: error.errno)
        }
    }

    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Replaces the file at `path` with `bytes`, mode 0600, so that a crash leaves the old file
    /// or the new one. The folder is made (0700) if missing.
    public static func writeAtomically(_ path: String, _ bytes: [UInt8]) throws {
        let folder = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let folderPath = folder.isEmpty ? (path.hasPrefix("/") ? "/" : ".") : folder
        try makeFolder(folderPath)
        let temporary = "\(path).new-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure.system(path: temporary, operation: "create", errno: errno) }
        do {
            defer { close(fd) }
            try Syscalls.writeFully(fd, bytes, offset: 0)
            try Syscalls.fsync(fd)
        } catch {
            unlink(temporary)
            throw Failure.system(path: path, operation: "write", errno: (error as? StoreError)?.errno ?? EIO)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw Failure.system(path: path, operation: "rename", errno: code)
        }
        let folderFD = open(folderPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderFD >= 0 {
            _ = fsync(folderFD)
            close(folderFD)
        }
    }

    /// Removes the file at `path` and syncs its folder; a file that is not there is fine.
    public static func remove(_ path: String) throws {
        guard unlink(path) == 0 || errno == ENOENT else { throw Failure.system(path: path, operation: "remove", errno: errno) }
        let folder = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let folderFD = open(folder.isEmpty ? (path.hasPrefix("/") ? "/" : ".") : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderFD >= 0 {
            _ = fsync(folderFD)
            close(folderFD)
        }
    }

    /// mkdir -p, with the last folder made 0700.
    public static func makeFolder(_ path: String) throws {
        var info = stat()
        if stat(path, &info) == 0 { return }
        let parent = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !parent.isEmpty && parent != path { try makeFolder(parent) }
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw Failure.system(path: path, operation: "mkdir", errno: errno) }
    }
}
