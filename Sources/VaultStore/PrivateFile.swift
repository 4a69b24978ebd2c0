import Glibc
import SystemCalls

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
        let fd: Int32
        do { fd = try SystemCall.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) } catch {
            if error.errno == ENOENT { return nil }
            throw Failure.system(path: path, operation: "open", errno: error.errno)
        }
        defer { SystemCall.close(fd) }
        let info: SystemCall.Status
        do { info = try SystemCall.status(fd) } catch { throw Failure.system(path: path, operation: "stat", errno: error.errno) }
        guard info.isRegular else { throw Failure.notARegularFile(path) }
        guard info.permissions & 0o077 == 0 else { throw Failure.tooOpen(path: path, mode: info.permissions) }
        do {
            return try Syscalls.readFully(fd, count: info.size, offset: 0)
        } catch let error as StoreError {
            throw Failure.system(path: path, operation: "read", errno: error.errno)
        }
    }

    public static func exists(_ path: String) -> Bool { (try? SystemCall.status(path)) != nil }

    /// Replaces the file at `path` with `bytes`, mode 0600, so that a crash leaves the old file
    /// or the new one. The folder is made (0700) if missing.
    public static func writeAtomically(_ path: String, _ bytes: [UInt8]) throws {
        let folder = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let folderPath = folder.isEmpty ? (path.hasPrefix("/") ? "/" : ".") : folder
        try makeFolder(folderPath)
        let temporary = "\(path).new-\(SystemCall.processID)"
        let fd: Int32
        do { fd = try SystemCall.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600) } catch {
            throw Failure.system(path: temporary, operation: "create", errno: error.errno)
        }
        do {
            defer { SystemCall.close(fd) }
            try Syscalls.writeFully(fd, bytes, offset: 0)
            try Syscalls.fsync(fd)
        } catch {
            try? SystemCall.unlink(temporary)
            throw Failure.system(path: path, operation: "write", errno: (error as? StoreError)?.errno ?? EIO)
        }
        do { try SystemCall.rename(temporary, path) } catch {
            try? SystemCall.unlink(temporary)
            throw Failure.system(path: path, operation: "rename", errno: error.errno)
        }
        if let folderFD = try? SystemCall.open(folderPath, O_RDONLY | O_DIRECTORY) {
            try? SystemCall.fsync(folderFD)
            SystemCall.close(folderFD)
        }
    }

    /// mkdir -p, with the last folder made 0700.
    public static func makeFolder(_ path: String) throws {
        if (try? SystemCall.status(path)) != nil { return }
        let parent = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !parent.isEmpty && parent != path { try makeFolder(parent) }
        do { _ = try SystemCall.makeFolder(path, mode: 0o700) } catch {
            throw Failure.system(path: path, operation: "mkdir", errno: error.errno)
        }
    }
}
