import CSystem
import Glibc
import SystemCalls

/// The file calls of the storage folder: built on `SystemCall.retrying` (EINTR handled there,
/// once for the whole program), failures turned into `StoreError`, pointer code kept here.
enum Syscalls {
    static func retrying<T: BinaryInteger>(_ operation: String, _ call: () -> T) throws -> T {
        do { return try SystemCall.retrying(operation, call) } catch { throw StoreError.fromErrno(operation, error.errno) }
    }

    static func openFolder(_ path: String) throws -> Int32 {
        try retrying("open \(path)") { open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
    }

    /// Opens a file in the folder, never following a symbolic link and never blocking on a FIFO,
    /// and leaving no access time (R-DEN-2).
    static func openFile(_ folder: Int32, _ name: String, _ flags: Int32) throws -> Int32 {
        try retrying("open") { openWithoutAccessTime(folder, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
    }

    static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    struct FileStatus {
        var isRegular: Bool; var size: Int; var allocatedBytes: Int; var isFolder: Bool
        /// Modification time, nanoseconds since the epoch.
        var modification: Int64
    }

    static func status(_ fd: Int32) throws -> FileStatus {
        var info = stat()
        _ = try retrying("fstat") { fstat(fd, &info) }
        return FileStatus(info)
    }

    /// Status of a name without following it; nil when nothing has that name.
    static func status(_ folder: Int32, _ name: String) throws -> FileStatus? {
        var info = stat()
        if fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 { return FileStatus(info) }
        if Glibc.errno == ENOENT { return nil }
        throw StoreError.fromErrno("stat", Glibc.errno)
    }

    static func readFully(_ fd: Int32, count: Int, offset: Int) throws -> [UInt8] {
        // Read into uninitialised memory: every byte returned was read (a short read throws),
        // and zero-filling the buffer first was 9 % of the daemon's instructions in a read of
        // every file of the benchmark's tree (docs/PERFORMANCE.md).
        try [UInt8](unsafeUninitializedCapacity: count) { buffer, done in
            while done < count {
                let n = try retrying("read") { pread(fd, buffer.baseAddress! + done, count - done, off_t(offset + done)) }
                if n == 0 { throw StoreError.unusableFile("(short read)") }
                done += n
            }
        }
    }

    static func writeFully(_ fd: Int32, _ bytes: [UInt8], offset: Int) throws {
        var done = 0
        try bytes.withUnsafeBytes { buffer in
            while done < buffer.count {
                done += try retrying("write") { pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done)) }
            }
        }
    }

    static func fsync(_ fd: Int32) throws { _ = try retrying("fsync") { Glibc.fsync(fd) } }
    static func fdatasync(_ fd: Int32) throws { _ = try retrying("fdatasync") { Glibc.fdatasync(fd) } }
    static func syncfs(_ fd: Int32) throws { _ = try retrying("syncfs") { dotsafe_syncfs(fd) } }

    /// A new unnamed file in the folder (O_TMPFILE), or nil where the file system has none.
    static func openUnnamed(_ folder: Int32) throws -> Int32? {
        let fd = dotsafe_open_unnamed(folder)
        if fd >= 0 { return fd }
        let code = Glibc.errno
        if code == EOPNOTSUPP || code == EISDIR || code == EINVAL || code == ENOENT { return nil }
        throw StoreError.fromErrno("open O_TMPFILE", code)
    }

    /// Gives an unnamed file its name; fails if the name exists.
    static func link(unnamed fd: Int32, folder: Int32, name: String) throws {
        let path = "/proc/self/fd/\(fd)"
        if linkat(AT_FDCWD, path, folder, name, AT_SYMLINK_FOLLOW) == 0 { return }
        if Glibc.errno == EEXIST { throw StoreError.exists(name) }
        throw StoreError.fromErrno("link", Glibc.errno)
    }

    static func unlink(_ folder: Int32, _ name: String) throws {
        _ = try retrying("unlink") { unlinkat(folder, name, 0) }
    }

    static func fileSystemCapacity(_ fd: Int32) throws -> (total: UInt64, free: UInt64, available: UInt64) {
        var info = statvfs()
        _ = try retrying("statvfs") { fstatvfs(fd, &info) }
        let unit = UInt64(info.f_frsize)
        return (UInt64(info.f_blocks) * unit, UInt64(info.f_bfree) * unit, UInt64(info.f_bavail) * unit)
    }

    /// Whether the file system holding `fd` is mounted read-only (ST_RDONLY): no write can succeed.
    static func isReadOnlyFileSystem(_ fd: Int32) throws -> Bool {
        var info = statvfs()
        _ = try retrying("statvfs") { fstatvfs(fd, &info) }
        return info.f_flag & UInt(ST_RDONLY) != 0
    }

    /// Names in the folder (without "." and "..").
    static func listNames(_ folder: Int32) throws -> [String] {
        let copy = try retrying("dup") { dup(folder) }
        guard let stream = fdopendir(copy) else {
            Glibc.close(copy)
            throw StoreError.fromErrno("opendir", Glibc.errno)
        }
        defer { closedir(stream) }
        rewinddir(stream)
        return SystemCall.names(in: stream)
    }
}

extension Syscalls.FileStatus {
    init(_ info: stat) {
        let type = info.st_mode & S_IFMT
        self.init(isRegular: type == S_IFREG, size: Int(info.st_size),
                  allocatedBytes: Int(info.st_blocks) * 512, isFolder: type == S_IFDIR,
                  modification: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }
}

extension Syscalls {
    /// Creates a folder, or returns false when something has that name already.
    static func makeFolder(_ path: String, mode: mode_t) throws -> Bool {
        if mkdir(path, mode) == 0 { return true }
        if Glibc.errno == EEXIST { return false }
        throw StoreError.fromErrno("mkdir \(path)", Glibc.errno)
    }

    static func setMode(_ fd: Int32, _ mode: mode_t) throws { _ = try retrying("fchmod") { fchmod(fd, mode) } }
}
