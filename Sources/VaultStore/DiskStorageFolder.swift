import Glibc
import Synchronization
import VaultCrypto
import VaultFormat

/// The real storage folder. Holds the folder open, so a folder renamed or replaced under a
/// running mount keeps being the one that was opened; every file is reached relative to it with
/// `O_NOFOLLOW` (R-SEC-4).
public final class DiskStorageFolder: StorageFolder {
    public let path: String
    private let folder: Int32
    private let writers: SharedFolderLock
    /// What a lock re-creates (docs/FORMAT.md §11.3).
    public let recreation: RecreationBudget
    /// What this process changed since it opened the folder: the session's files, which the lock
    /// re-creates and moves to a later whole second (docs/FORMAT.md §11.2).
    private let changes = Mutex(SessionChanges())
    /// What the last re-creation did (for the daemon's report and the tests).
    public var lastRecreation: StorageRecreator.Summary? { recreated.withLock { $0 } }
    private let recreated = Mutex<StorageRecreator.Summary?>(nil)
    /// Where a new group's files are staged for their writes past the page cache (`DirectIO`).
    private let staging = AlignedBuffers(count: Format.fileSize / DirectIO.alignment * DirectIO.alignment)
    /// Unnamed files opened before `writeUnnamed` asks (nil: each opened when asked).
    private let ahead: UnnamedFilesAhead?
    /// How many unnamed files a folder keeps open ahead: two groups' worth.
    public static let unnamedFilesAhead = 2 * Format.groupSize

    public init(path: String, recreation: RecreationBudget = .standard, unnamedAhead: Int = unnamedFilesAhead) throws {
        self.path = path
        self.recreation = recreation
        folder = try Syscalls.openFolder(path)
        writers = SharedFolderLock(folder: folder)
        ahead = unnamedAhead > 0 ? UnnamedFilesAhead(folder: folder, depth: unnamedAhead) : nil
    }

    deinit {
        ahead?.close()
        Syscalls.close(folder)
    }

    /// Device and inode of the folder: what identifies "this storage" while it is open.
    public func identity() throws -> (device: UInt64, inode: UInt64) {
        var info = stat()
        _ = try Syscalls.retrying("fstat") { fstat(folder, &info) }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    func withFolder<R>(_ body: (Int32) throws -> R) rethrows -> R { try body(folder) }

    public func listAllNames() throws -> [String] { try Syscalls.listNames(folder) }

    public func listFiles() throws -> [String] {
        try Syscalls.listNames(folder).filter { name in
            guard FileName.isWellFormed(name), let status = try Syscalls.status(folder, name) else { return false }
            return status.isRegular && status.size == Format.fileSize
        }
    }

    public func entryExists(_ name: String) throws -> Bool { try Syscalls.status(folder, name) != nil }

    public func read(_ name: String) throws -> [UInt8]? {
        guard try entryExists(name) else { return nil }
        return try read(name, offset: 0, count: Format.fileSize)
    }

    /// Past the page cache where the file system allows (`DirectIO`), else as `read`.
    public func readStreaming(_ name: String) throws -> ArraySlice<UInt8>? {
        let fd: Int32
        do { fd = try Syscalls.openFile(folder, name, O_RDONLY | DirectIO.flag) } catch StoreError.system(_, let code) {
            if code == ENOENT { return nil }
            return try read(name)?[...]
        }
        defer { Syscalls.close(fd) }
        let status = try Syscalls.status(fd)
        guard status.isRegular, status.size == Format.fileSize else { throw StoreError.unusableFile(name) }
        return try DirectIO.readWhole(fd, count: Format.fileSize) ?? Syscalls.readFully(fd, count: Format.fileSize, offset: 0)[...]
    }

    /// Reads take no flock, only writes do (`SharedFolderLock`): a re-creation (FORMAT.md §11.3)
    /// renames over a name only a copy it checked holds that name's bytes, so a read opens the
    /// old file or the copy and gets the same bytes from either, and a file opened before the
    /// rename stays readable after it. A writer needs the lock because its bytes must not land
    /// in the old file once the copy is made; a reader changes nothing that the copy could miss.
    public func read(_ name: String, offset: Int, count: Int) throws -> [UInt8] {
        precondition(offset >= 0 && count >= 0 && offset + count <= Format.fileSize, "read outside a storage file")
        let (fd, _) = try openStorageFile(name, O_RDONLY)
        defer { Syscalls.close(fd) }
        return try Syscalls.readFully(fd, count: count, offset: offset)
    }

    public func create(_ name: String, contents: [UInt8], durable: Bool) throws {
        precondition(contents.count == Format.fileSize && FileName.isWellFormed(name), "storage files have one size and name form")
        try writers.withShared { try createUnlocked(name, contents: contents, durable: durable) }
        changes.withLock { $0.change(name, before: 0) }
    }

    /// Every file written unnamed (`O_TMPFILE`) first, then the names linked in a row: the count
    /// of files moves by the group at once, and a failure or a crash before the links leaves
    /// nothing. Without `O_TMPFILE`, one file after the other.
    public func createGroup(_ files: [(name: String, contents: [UInt8])]) throws {
        try createGroup(files, written: [])
    }

    public func createGroup(_ files: [(name: String, contents: [UInt8])], written: [(name: String, file: UnnamedFile)]) throws {
        precondition(files.allSatisfy { $0.contents.count == Format.fileSize && FileName.isWellFormed($0.name) }
                     && written.allSatisfy { FileName.isWellFormed($0.name) }, "storage files have one size and name form")
        try writers.withShared {
            var unnamed = written
            for file in files {
                guard let made = try writeUnnamed(file.contents) else {
                    precondition(written.isEmpty, "unnamed files where there are none")
                    return try createOneByOne(files)
                }
                unnamed.append((file.name, made))
            }
            var linked: [String] = []
            do {
                for file in unnamed {
                    try Syscalls.link(unnamed: file.file.descriptor, folder: folder, name: file.name)
                    linked.append(file.name)
                }
            } catch {
                for name in linked { try? Syscalls.unlink(folder, name) }
                throw error
            }
        }
        changes.withLock { changes in for name in files.map(\.name) + written.map(\.name) { changes.change(name, before: 0) } }
    }

    public func createDurableGroup(_ files: [(name: String, contents: [UInt8])]) throws {
        var unnamed: [(name: String, file: UnnamedFile)] = []
        for file in files {
            guard let made = try writeUnnamed(file.contents) else {
                precondition(unnamed.isEmpty, "unnamed files where there are none")
                for file in files { try create(file.name, contents: file.contents, durable: true) }
                return
            }
            try Syscalls.fsync(made.descriptor)
            unnamed.append((file.name, made))
        }
        try createGroup([], written: unnamed)
    }

    /// Past the page cache where the file system allows (`DirectIO`), else through it.
    public func writeUnnamed(_ contents: [UInt8]) throws -> UnnamedFile? {
        precondition(contents.count == Format.fileSize, "storage files have one size")
        if let fd = ahead?.take() ?? DirectIO.openUnnamed(folder) {
            let file = UnnamedFile(descriptor: fd)
            try staging.withBuffer { try DirectIO.write(fd, contents, staging: $0) }
            return file
        }
        guard let fd = try Syscalls.openUnnamed(folder) else { return nil }
        let file = UnnamedFile(descriptor: fd)
        try Syscalls.writeFully(fd, contents, offset: 0)
        return file
    }

    public func releaseSpareFiles() { ahead?.drop() }

    /// Renamed in, under the writers' shared lock (docs/FORMAT.md §13.11): each group's fill is
    /// written unnamed first, then its files get their names in a row.
    public func placeDownloads(from downloads: DownloadFolder, replacing: [String], groups: [DownloadedGroup]) throws {
        try writers.withShared {
            for name in replacing { try downloads.move(name, to: folder) }
            for group in groups {
                var unnamed: [Int32] = []
                defer { unnamed.forEach(Syscalls.close) }
                for file in group.fill {
                    guard let fd = try Syscalls.openUnnamed(folder) else { break }
                    unnamed.append(fd)
                    try Syscalls.writeFully(fd, file.contents, offset: 0)
                }
                for name in group.downloaded {
                    guard try Syscalls.status(folder, name) == nil else { throw StoreError.exists(name) }
                    try downloads.move(name, to: folder)
                }
                for (index, file) in group.fill.enumerated() {
                    if index < unnamed.count {
                        try Syscalls.link(unnamed: unnamed[index], folder: folder, name: file.name)
                    } else {
                        try createUnlocked(file.name, contents: file.contents, durable: false)
                    }
                }
            }
        }
        changes.withLock { changes in
            for name in groups.flatMap({ $0.fill.map(\.name) }) { changes.change(name, before: 0) }
        }
    }

    private func createOneByOne(_ files: [(name: String, contents: [UInt8])]) throws {
        var created: [String] = []
        do {
            for file in files {
                try createUnlocked(file.name, contents: file.contents, durable: false)
                created.append(file.name)
            }
        } catch {
            for name in created { try? Syscalls.unlink(folder, name) }
            throw error
        }
    }

    private func createUnlocked(_ name: String, contents: [UInt8], durable: Bool) throws {
        if let fd = try Syscalls.openUnnamed(folder) {
            defer { Syscalls.close(fd) }
            try Syscalls.writeFully(fd, contents, offset: 0)
            if durable { try Syscalls.fsync(fd) }
            try Syscalls.link(unnamed: fd, folder: folder, name: name)
            return
        }
        // No O_TMPFILE here: the file appears at its name and is filled at once.
        let fd: Int32
        do { fd = try Syscalls.openFile(folder, name, O_WRONLY | O_CREAT | O_EXCL) } catch StoreError.system(_, EEXIST) {
            throw StoreError.exists(name)
        }
        defer { Syscalls.close(fd) }
        do {
            try Syscalls.writeFully(fd, contents, offset: 0)
            if durable { try Syscalls.fsync(fd) }
        } catch {
            try? Syscalls.unlink(folder, name)
            throw error
        }
    }

    public func write(_ name: String, offset: Int, bytes: [UInt8]) throws {
        precondition(offset >= 0 && offset + bytes.count <= Format.fileSize, "write outside a storage file")
        try writers.withShared {
            let (fd, status) = try openStorageFile(name, O_WRONLY)
            defer { Syscalls.close(fd) }
            // Under the shared lock: no re-creation moves the time between this look and the write.
            changes.withLock { $0.change(name, before: status.modification) }
            try Syscalls.writeFully(fd, bytes, offset: offset)
        }
    }

    public func sync(_ names: [String]) throws {
        // One syncfs is cheaper than many fsyncs once a commit has written more than a few files.
        if names.count > 8 { return try Syscalls.syncfs(folder) }
        for name in names {
            let (fd, _) = try openStorageFile(name, O_RDONLY)
            defer { Syscalls.close(fd) }
            try Syscalls.fdatasync(fd)
        }
    }

    public func syncFolder() throws { try Syscalls.fsync(folder) }

    public func remove(_ name: String) throws {
        guard let status = try Syscalls.status(folder, name) else { return }
        guard status.isRegular, FileName.isWellFormed(name) else {
            throw StoreError.unusableFile(name)
        }
        try writers.withShared { try Syscalls.unlink(folder, name) }
        changes.withLock { $0.remove(name, time: status.modification) }
    }

    /// A copy at `NAME.recreated` (the re-creation's temporary name, §11.3, so that a crash's
    /// leftover is removed at the next open), synced, renamed over NAME, the folder synced.
    public func replace(_ name: String, contents: [UInt8]) throws {
        precondition(contents.count == Format.fileSize && FileName.isWellFormed(name), "storage files have one size and name form")
        guard let status = try Syscalls.status(folder, name), status.isRegular, status.size == Format.fileSize else {
            throw StoreError.unusableFile(name)
        }
        let temporary = name + StorageRecreator.temporarySuffix
        try writers.withShared {
            if try Syscalls.status(folder, temporary) != nil { try Syscalls.unlink(folder, temporary) }
            let fd = try Syscalls.openFile(folder, temporary, O_WRONLY | O_CREAT | O_EXCL)
            do {
                defer { Syscalls.close(fd) }
                try Syscalls.setMode(fd, 0o600)
                try Syscalls.writeFully(fd, contents, offset: 0)
                try Syscalls.fsync(fd)
                try Syscalls.rename(folder, temporary, to: name)
            } catch {
                try? Syscalls.unlink(folder, temporary)
                throw error
            }
            try Syscalls.fsync(folder)
        }
        changes.withLock { $0.change(name, before: status.modification) }
    }

    public func rename(_ name: String, to newName: String) throws {
        precondition(FileName.isWellFormed(newName), "storage files have one name form")
        let time = try writers.withShared {
            // Only a file of the storage's form is ever moved (R-SEC-4).
            let (fd, status) = try openStorageFile(name, O_RDONLY)
            Syscalls.close(fd)
            try Syscalls.renameNoReplace(folder, name, to: newName)
            return status.modification
        }
        // The lock re-creates the file under its new name.
        changes.withLock { $0.rename(name, time: time, to: newName) }
    }

    public func removeRecreationLeftovers() throws {
        try StorageRecreator(folder: folder).removeLeftovers()
        try DownloadFolder.removeLeftovers(in: folder)
    }

    public func downloadLeftovers() throws -> Int { try DownloadFolder.countLeftovers(in: folder) }

    /// Each name is the session's file from now on, with the time it has (a download is about to
    /// write it from outside this folder).
    public func willOverwrite(_ names: [String]) throws {
        for name in names {
            let time = try Syscalls.status(folder, name)?.modification ?? 0
            changes.withLock { $0.change(name, before: time) }
        }
    }

    public func recreateAtLock(random: any RandomSource) throws {
        let session = changes.withLock { $0 }
        guard !session.isEmpty else { return }
        let summary = try StorageRecreator(folder: folder).recreateAtLock(written: Set(session.written.keys), earlierTimes: session.written,
                                                                          budget: recreation, random: random)
        changes.withLock { $0 = SessionChanges() }
        recreated.withLock { $0 = summary }
    }

    /// Whether the storage is on a read-only file system: a command that must write says so first.
    public func isOnReadOnlyFileSystem() throws -> Bool { try Syscalls.isReadOnlyFileSystem(folder) }

    public func capacity() throws -> (total: UInt64, free: UInt64, available: UInt64) { try Syscalls.fileSystemCapacity(folder) }

    /// Bytes the file system has allocated for a file: sparse files would show fewer.
    public func allocatedBytes(_ name: String) throws -> Int? { try Syscalls.status(folder, name)?.allocatedBytes }

    private func openStorageFile(_ name: String, _ flags: Int32) throws -> (Int32, Syscalls.FileStatus) {
        let fd: Int32
        // Nothing there, a link, a FIFO without a writer, a folder opened for writing: all are
        // a damaged file (EIO), never a system error that would name the cause.
        do { fd = try Syscalls.openFile(folder, name, flags) } catch StoreError.system(_, let code)
            where code == ENOENT || code == ELOOP || code == ENXIO || code == EISDIR {
            throw StoreError.unusableFile(name)
        }
        let status = try Syscalls.status(fd)
        guard status.isRegular, status.size == Format.fileSize else {
            Syscalls.close(fd)
            throw StoreError.unusableFile(name)
        }
        return (fd, status)
    }
}
