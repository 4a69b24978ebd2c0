import CSystem
import Glibc

/// The one place where DotSafe's own code makes raw system calls for processes, sockets, lock
/// files and the terminal (swift-system's Syscalls.swift and swift-nio's SystemCallHelpers.swift
/// are the models). Every call that can be interrupted is retried on EINTR here, once for all
/// callers, and a failure becomes a `SystemError` carrying errno. The storage folder's file calls
/// (`VaultStore/Syscalls.swift`) are built on `retrying` too.
public enum SystemCall {
    /// Calls `call` until it does not fail with EINTR; a negative result throws with errno.
    @discardableResult
    public static func retrying<T: BinaryInteger>(_ operation: String, _ call: () -> T) throws(SystemError) -> T {
        while true {
            let result = call()
            if result >= 0 { return result }
            let code = errno
            if code == EINTR { continue }
            throw SystemError(operation, code)
        }
    }

    /// Closes a descriptor. Linux releases the descriptor even when close reports EINTR, so it
    /// is never retried (retrying could close a descriptor another thread just opened).
    public static func close(_ descriptor: Int32) { _ = Glibc.close(descriptor) }

    /// Writes every byte, retrying short writes and EINTR.
    public static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            done += try retrying("write") { Glibc.write(descriptor, bytes.baseAddress! + done, bytes.count - done) }
        }
    }

    /// Reads one byte; nil at the end of input.
    public static func readByte(_ descriptor: Int32) throws(SystemError) -> UInt8? {
        var byte: UInt8 = 0
        let count = try retrying("read") { Glibc.read(descriptor, &byte, 1) }
        return count == 0 ? nil : byte
    }

    /// Reads until the end of input or until `buffer` is full; the number of bytes read.
    public static func readFully(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        var done = 0
        while done < buffer.count {
            let count = try retrying("read") { Glibc.read(descriptor, buffer.baseAddress! + done, buffer.count - done) }
            if count == 0 { break }
            done += count
        }
        return done
    }

    /// Every byte of a file, read until the end. For /proc files, which report size 0 and give a
    /// page per read: Foundation's `String(contentsOfFile:)` stops after the first 4 KiB of them.
    public static func readAll(_ path: String) throws(SystemError) -> [UInt8] {
        let descriptor = try open(path, O_RDONLY)
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let (count, code) = chunk.withUnsafeMutableBytes { buffer in (Glibc.read(descriptor, buffer.baseAddress, buffer.count), errno) }
            if count < 0 {
                if code == EINTR { continue }
                throw SystemError("read \(path)", code)
            }
            if count == 0 { return bytes }
            bytes += chunk[..<count]
        }
    }

    /// Opens a path (never creating it unless `flags` says so); the descriptor is close-on-exec.
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o600) throws(SystemError) -> Int32 {
        try retrying("open \(path)") { Glibc.open(path, flags | O_CLOEXEC, mode) }
    }

    public static func unlink(_ path: String) throws(SystemError) { try retrying("unlink \(path)") { Glibc.unlink(path) } }

    public static func rename(_ from: String, _ to: String) throws(SystemError) {
        try retrying("rename \(from)") { Glibc.rename(from, to) }
    }

    public static func fsync(_ descriptor: Int32) throws(SystemError) { try retrying("fsync") { Glibc.fsync(descriptor) } }

    /// Creates a folder; false when something has that name already.
    public static func makeFolder(_ path: String, mode: mode_t) throws(SystemError) -> Bool {
        if mkdir(path, mode) == 0 { return true }
        if errno == EEXIST { return false }
        throw SystemError("mkdir \(path)", errno)
    }

    public struct Status: Sendable, Equatable {
        public var isRegular: Bool, isFolder: Bool, isSymbolicLink: Bool
        public var owner: uid_t, permissions: UInt32, size: Int, device: UInt64, inode: UInt64, links: UInt64

        init(_ info: stat) {
            let type = info.st_mode & S_IFMT
            isRegular = type == S_IFREG; isFolder = type == S_IFDIR; isSymbolicLink = type == S_IFLNK
            owner = info.st_uid; permissions = UInt32(info.st_mode & 0o7777); size = Int(info.st_size)
            device = UInt64(info.st_dev); inode = UInt64(info.st_ino); links = UInt64(info.st_nlink)
        }
    }

    /// The status of a path without following a last symbolic link; nil when nothing is there.
    public static func status(_ path: String) throws(SystemError) -> Status? {
        var info = stat()
        if lstat(path, &info) == 0 { return Status(info) }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw SystemError("stat \(path)", errno)
    }

    public static func status(_ descriptor: Int32) throws(SystemError) -> Status {
        var info = stat()
        try retrying("fstat") { fstat(descriptor, &info) }
        return Status(info)
    }

    /// Names in a folder, without "." and "..".
    public static func listFolder(_ path: String) throws(SystemError) -> [String] {
        guard let stream = opendir(path) else { throw SystemError("opendir \(path)", errno) }
        defer { closedir(stream) }
        return names(in: stream)
    }

    /// The names an open directory stream lists from where it stands, without "." and "..".
    public static func names(in stream: OpaquePointer) -> [String] {
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    public static var userID: uid_t { getuid() }

    /// Whether `path` is a FUSE mount whose daemon is gone: the kernel answers ENOTCONN.
    /// `statfs`, as `stat` may be answered from the kernel's attribute cache.
    public static func isDisconnected(_ path: String) -> Bool {
        var info = statfs()
        return statfs(path, &info) != 0 && errno == ENOTCONN
    }

    /// This user's home folder from the password database (getpwuid), for when HOME is unset.
    public static var homeFolder: String? {
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else { return nil }
        let home = String(cString: directory)
        return home.hasPrefix("/") ? home : nil
    }
    public static var processID: pid_t { getpid() }
}

/// A failed system call: what was attempted and the errno it gave.
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    public let operation: String
    public let errno: Int32

    public init(_ operation: String, _ errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String { "\(operation): \(String(cString: strerror(errno)))" }
}
