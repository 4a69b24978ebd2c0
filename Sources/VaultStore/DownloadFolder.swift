import Glibc
import VaultCrypto
import VaultFormat

/// A sync's download folder (docs/FORMAT.md §13.11): `NAME.downloading` in the storage folder,
/// NAME random of the storage's name form. rclone writes a file in place, so a batch lands here
/// and its files go to their names only whole (`StorageFolder.placeDownloads`). The folder is
/// held with an exclusive `flock` while it exists: the next writing open of any vault removes
/// one a killed sync left (`removeLeftovers`), never one in use.
public final class DownloadFolder: @unchecked Sendable {
    // @unchecked: the descriptors are set once; the one sync that made the folder uses it.
    public static let suffix = ".downloading"
    public let path: String
    let name: String
    let storage: Int32
    let fd: Int32
    private var removed = false

    /// Makes and locks a new download folder in the storage folder at `storagePath`.
    public init(storagePath: String, random: any RandomSource) throws {
        storage = try Syscalls.openFolder(storagePath)
        do {
            (name, fd) = try Self.make(storage, random: random)
        } catch {
            Syscalls.close(storage)
            throw error
        }
        path = storagePath + "/" + name
    }

    deinit {
        Syscalls.close(fd)
        Syscalls.close(storage)
    }

    private static func make(_ storage: Int32, random: any RandomSource) throws -> (String, Int32) {
        while true {
            let name = FileName.encode(try random.bytes(Format.nameBytes)) + suffix
            guard mkdirat(storage, name, 0o700) == 0 else {
                if Glibc.errno == EEXIST || Glibc.errno == EINTR { continue }
                throw StoreError.fromErrno("mkdir \(name)", Glibc.errno)
            }
            guard let fd = try? Syscalls.openFile(storage, name, O_RDONLY | O_DIRECTORY) else { continue }
            // Waits for the lock: another process may hold it for a moment, to remove a
            // leftover (then the folder is gone: make another) or to count leftovers (fsck).
            if (try? Syscalls.lockFolder(fd, exclusive: true)) != nil, try Syscalls.status(storage, name)?.isFolder == true {
                return (name, fd)
            }
            Syscalls.close(fd)
        }
    }

    /// Whether `name` came down here as a regular file of the storage size.
    public func holdsWhole(_ name: String) -> Bool {
        guard let status = try? Syscalls.status(fd, name) else { return false }
        return status.isRegular && status.size == Format.fileSize
    }

    /// The bytes of a file that came down here (for folders that cannot rename it in, and a
    /// join's comparison with a file at its name).
    public func read(_ name: String) throws -> [UInt8] {
        let file = try Syscalls.openFile(fd, name, O_RDONLY)
        defer { Syscalls.close(file) }
        return try Syscalls.readFully(file, count: Format.fileSize, offset: 0)
    }

    func unlink(_ name: String) throws { try Syscalls.unlink(fd, name) }

    /// Gives a file that came down here another name here, to be placed at that name (a grant
    /// goes over the file at its number's own name, docs/FORMAT.md §14.9).
    public func rename(_ name: String, to newName: String) throws {
        precondition(FileName.isWellFormed(newName), "storage files have one name form")
        try Syscalls.renameNoReplace(fd, name, to: newName)
    }

    /// Renames a file that came down here to its name in the storage folder `folder` (the
    /// same file system), atomically replacing what is there.
    /// It takes the storage files' mode first (rclone's umask would tell downloaded files apart).
    func move(_ name: String, to folder: Int32) throws {
        let file = try Syscalls.openFile(fd, name, O_RDONLY)
        defer { Syscalls.close(file) }
        try Syscalls.setMode(file, 0o600)
        _ = try Syscalls.retrying("rename") { renameat(fd, name, folder, name) }
    }

    /// Removes the folder with what is left in it (a completed or failed sync).
    public func remove() throws {
        guard !removed else { return }
        try Self.empty(fd)
        _ = try Syscalls.retrying("rmdir") { unlinkat(storage, name, AT_REMOVEDIR) }
        removed = true
    }

    private static func empty(_ fd: Int32) throws {
        for name in try Syscalls.listNames(fd) { try Syscalls.unlink(fd, name) }
    }

    /// At the open of a vault that writes: each download folder whose lock can be taken (its
    /// sync was killed) goes with its files. Returns how many.
    @discardableResult
    static func removeLeftovers(in storage: Int32) throws -> Int {
        let removed = try forEachLeftover(in: storage) { name, fd in
            try empty(fd)
            _ = try Syscalls.retrying("rmdir") { unlinkat(storage, name, AT_REMOVEDIR) }
        }
        if removed > 0 { try Syscalls.fsync(storage) }
        return removed
    }

    /// How many download folders killed syncs left (`dotsafe fsck`); one a sync holds is not
    /// counted. Each lock is held only for the look.
    static func countLeftovers(in storage: Int32) throws -> Int {
        try forEachLeftover(in: storage) { _, _ in }
    }

    /// Calls `body` with the name and descriptor of each download folder whose lock it can take
    /// (`LOCK_NB`: a held lock is a sync in progress), holding that lock; returns how many.
    private static func forEachLeftover(in storage: Int32, _ body: (String, Int32) throws -> Void) throws -> Int {
        var count = 0
        for name in try Syscalls.listNames(storage) where name.hasSuffix(suffix) && FileName.isWellFormed(String(name.dropLast(suffix.count))) {
            guard let fd = try? Syscalls.openFile(storage, name, O_RDONLY | O_DIRECTORY) else { continue }
            defer { Syscalls.close(fd) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            try body(name, fd)
            count += 1
        }
        return count
    }
}

/// One group of another device that has no file here yet, as a sync's download completes it
/// (`StorageFolder.placeDownloads`): the files that came down, and the rest in random bytes.
public struct DownloadedGroup: Sendable {
    public var downloaded: [String]
    public var fill: [(name: String, contents: [UInt8])]

    public init(downloaded: [String], fill: [(name: String, contents: [UInt8])]) {
        self.downloaded = downloaded
        self.fill = fill
    }
}

extension StorageFolder {
    /// Through memory, for folders that cannot rename a file in (memory, tests' wrappers):
    /// `replace` and `createGroup` keep the same promises.
    public func placeDownloads(from downloads: DownloadFolder, replacing: [String], groups: [DownloadedGroup]) throws {
        for name in replacing {
            try replace(name, contents: try downloads.read(name))
            try downloads.unlink(name)
        }
        for group in groups {
            try createGroup(try group.downloaded.map { ($0, try downloads.read($0)) } + group.fill)
            for name in group.downloaded { try downloads.unlink(name) }
        }
    }
}
