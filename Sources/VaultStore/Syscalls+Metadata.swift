import CSystem
import Glibc

/// The metadata calls of the storage folder: statx for everything an observer of the folder
/// sees (birth time included), and opens that leave no access time (R-DEN-2). Apart from
/// Syscalls.swift so that the metadata work stays a small, separate diff.
extension Syscalls {
    /// `O_NOATIME`: reading leaves the access time alone. Only the file's owner (or
    /// CAP_FOWNER) may ask; others get EPERM and open without it.
    static let noAccessTime = Int32(DOTSAFE_O_NOATIME)

    /// `openat` with `O_NOATIME`, and without it where the caller does not own the file.
    static func openWithoutAccessTime(_ folder: Int32, _ name: String, _ flags: Int32) -> Int32 {
        let fd = openat(folder, name, flags | noAccessTime)
        if fd >= 0 || Glibc.errno != EPERM { return fd }
        return openat(folder, name, flags)
    }

    /// How many extents the file system maps `name`'s blocks to, and where the first starts on
    /// the device (FIEMAP); nil where it keeps no such map (tmpfs) or the file cannot be
    /// opened. Opening reads nothing: no access time.
    static func extentMap(_ folder: Int32, _ name: String) -> (count: Int, firstBlock: Int64?)? {
        let fd = openWithoutAccessTime(folder, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var first: Int64 = -1
        let count = dotsafe_extent_map(fd, &first)
        return count >= 0 ? (Int(count), first >= 0 ? first : nil) : nil
    }

    /// How many extents the file system maps the open file's blocks to (one FIEMAP); nil where
    /// it keeps no such map.
    static func extentCount(_ fd: Int32) -> Int? {
        let count = dotsafe_extent_count(fd)
        return count >= 0 ? Int(count) : nil
    }

    /// Takes `count` bytes of blocks for `fd` at once (`fallocate`), so that the file lies in
    /// one piece however it is written (docs/FORMAT.md §3); nothing where the file system
    /// cannot (the write then allocates, as it always did).
    static func allocate(_ fd: Int32, _ count: Int) { _ = dotsafe_allocate(fd, Int64(count)) }

    /// Opens a folder for listing without touching its access time.
    static func openFolderWithoutAccessTime(_ path: String) throws -> Int32 {
        try retrying("open \(path)") {
            let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
            let fd = open(path, flags | noAccessTime)
            return fd >= 0 || Glibc.errno != EPERM ? fd : open(path, flags)
        }
    }

    /// Every field statx gives for a name in the folder, without following it; nil when
    /// nothing has that name. Times in nanoseconds since the epoch; `birth` nil where the file
    /// system keeps none.
    static func metadata(_ folder: Int32, _ name: String) throws -> FileMetadata? {
        try metadata(folder, name, flags: AT_SYMLINK_NOFOLLOW)
    }

    private static func metadata(_ folder: Int32, _ name: String, flags: Int32) throws -> FileMetadata? {
        var info = statx()
        let mask = UInt32(STATX_BASIC_STATS) | UInt32(STATX_BTIME)
        while dotsafe_statx(folder, name, flags, mask, &info) != 0 {
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == ENOENT { return nil }
            throw StoreError.fromErrno("statx", code)
        }
        func nanoseconds(_ time: statx_timestamp) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec) }
        let hasBirth = info.stx_mask & UInt32(STATX_BTIME) != 0
        return FileMetadata(mode: UInt32(info.stx_mode), uid: info.stx_uid, gid: info.stx_gid, size: Int64(info.stx_size),
                            inode: info.stx_ino, links: info.stx_nlink,
                            access: nanoseconds(info.stx_atime), modification: nanoseconds(info.stx_mtime),
                            change: nanoseconds(info.stx_ctime), birth: hasBirth ? nanoseconds(info.stx_btime) : nil)
    }

    /// The statfs magic number of the file system holding `fd` (0xEF53 ext2/3/4, 0x01021994 tmpfs …).
    static func fileSystemType(_ fd: Int32) throws -> UInt64 {
        UInt64(truncatingIfNeeded: try retrying("fstatfs") { dotsafe_file_system_type(fd) })
    }
}

/// What statx says about one entry of the storage folder.
public struct FileMetadata: Equatable, Sendable {
    /// Type and permission bits, as in `st_mode`.
    public var mode: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var size: Int64
    public var inode: UInt64
    public var links: UInt32
    /// Times in nanoseconds since the epoch.
    public var access: Int64
    public var modification: Int64
    public var change: Int64
    public var birth: Int64?

    public var isRegular: Bool { mode & UInt32(Glibc.S_IFMT) == UInt32(Glibc.S_IFREG) }
}

/// The calls that re-creating a storage file needs (`StorageRecreator`).
extension Syscalls {
    /// flock(2) on the folder: shared for writers, exclusive for re-creation.
    static func lockFolder(_ folder: Int32, exclusive: Bool) throws {
        _ = try retrying("flock") { flock(folder, exclusive ? LOCK_EX : LOCK_SH) }
    }

    static func unlockFolder(_ folder: Int32) { _ = flock(folder, LOCK_UN) }

    /// Renames within the folder, replacing what has the new name (atomically).
    static func rename(_ folder: Int32, _ from: String, to: String) throws {
        _ = try retrying("rename") { renameat(folder, from, folder, to) }
    }

    /// Renames within the folder unless something has the new name (renameat2
    /// `RENAME_NOREPLACE`: `exists`). Where the file system has no such flag, the name is
    /// checked first and renamed plainly (the folder is the vault's; only a racing process of
    /// the same user could put something there in between).
    static func renameNoReplace(_ folder: Int32, _ from: String, to: String) throws {
        while dotsafe_rename_in(folder, from, to, UInt32(DOTSAFE_RENAME_NOREPLACE)) != 0 {
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == EEXIST { throw StoreError.exists(to) }
            guard code == EINVAL || code == ENOSYS || code == EOPNOTSUPP else { throw StoreError.fromErrno("rename", code) }
            guard try status(folder, to) == nil else { throw StoreError.exists(to) }
            return try rename(folder, from, to: to)
        }
    }

    /// Swaps what two names of the folder hold (renameat2 `RENAME_EXCHANGE`), atomically; false
    /// where the file system cannot (then nothing happened).
    static func exchange(_ folder: Int32, _ first: String, _ second: String) throws -> Bool {
        while dotsafe_rename_in(folder, first, second, UInt32(DOTSAFE_RENAME_EXCHANGE)) != 0 {
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == EINVAL || code == ENOSYS || code == EOPNOTSUPP { return false }
            throw StoreError.fromErrno("rename", code)
        }
        return true
    }

    /// Whether `fd` is the only open of its file, in any process (a write lease is granted
    /// only then); false where that cannot be known.
    static func isOnlyOpen(_ fd: Int32) -> Bool { dotsafe_is_only_open(fd) == 1 }

    /// What statx says about the file `fd` is open on.
    static func metadata(_ fd: Int32) throws -> FileMetadata {
        guard let metadata = try metadata(fd, "", flags: Int32(DOTSAFE_AT_EMPTY_PATH)) else { throw StoreError.fromErrno("statx", ENOENT) }
        return metadata
    }

    /// Sets access and modification time of a name in the folder (nanoseconds since the epoch),
    /// without following it. The kernel sets the change time to now.
    static func setTimes(_ folder: Int32, _ name: String, access: Int64, modification: Int64) throws {
        var times = [timespec(tv_sec: Int(access / 1_000_000_000), tv_nsec: Int(access % 1_000_000_000)),
                     timespec(tv_sec: Int(modification / 1_000_000_000), tv_nsec: Int(modification % 1_000_000_000))]
        _ = try retrying("utimensat") { utimensat(folder, name, &times, AT_SYMLINK_NOFOLLOW) }
    }
}

extension Syscalls {
    /// A new open of the folder `folder` is open on (not a dup: flock belongs to an open, and
    /// the re-creation's exclusive lock must not be the writers' shared one).
    static func reopenFolder(_ folder: Int32) throws -> Int32 {
        try retrying("open .") { openat(folder, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
    }

    /// The real-time clock in nanoseconds since the epoch: the times a re-creation sets.
    static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
