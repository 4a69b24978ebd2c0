import Glibc

/// Open files and folders by handle number (FUSE's `fh`). Each handle holds its vault item, so
/// an unlinked open file stays readable until its last handle is released.
struct HandleTable {
    struct OpenFile {
        let inode: UInt64
        let readable: Bool
        let writable: Bool
        /// O_APPEND: every write goes to the end of the file as it is at the time of the write.
        let append: Bool
        /// The kernel may keep its page cache of the file at this open (FUSE's keep_cache).
        let keepsCache: Bool

        init(inode: UInt64, flags: Int32, keepsCache: Bool = false) {
            self.inode = inode
            self.keepsCache = keepsCache
            let access = flags & O_ACCMODE
            readable = access == O_RDONLY || access == O_RDWR
            writable = access == O_WRONLY || access == O_RDWR
            append = flags & O_APPEND != 0
        }
    }

    struct OpenDirectory {
        let inode: UInt64
        /// The listing as of opendir (or the last rewind): offsets stay stable while it is read.
        var entries: [(name: [UInt8], id: UInt64)]
        var parent: UInt64
        /// True until the first read: a read at offset 0 lists the folder again only after that
        /// (rewinddir), not right after opendir.
        var fresh = true
    }

    enum Handle {
        case file(OpenFile)
        case directory(OpenDirectory)

        var inode: UInt64 {
            switch self {
            case .file(let file): file.inode
            case .directory(let directory): directory.inode
            }
        }
    }

    private var next: UInt64 = 1
    private var handles: [UInt64: Handle] = [:]
    /// Open handles with write access, by inode: while a file has one, the kernel may hold
    /// pages newer than the vault's, so nothing is pushed into its page cache.
    private var writers: [UInt64: Int] = [:]
    /// Open handles of each file, with write access or not.
    private var openFiles: [UInt64: Int] = [:]

    var count: Int { handles.count }

    func hasWriters(_ inode: UInt64) -> Bool { writers[inode] != nil }

    /// How many handles are open on file `inode`.
    func openCount(_ inode: UInt64) -> Int { openFiles[inode] ?? 0 }

    mutating func add(_ handle: Handle) -> UInt64 {
        defer { next += 1 }
        handles[next] = handle
        if case .file(let file) = handle {
            openFiles[file.inode, default: 0] += 1
            if file.writable { writers[file.inode, default: 0] += 1 }
        }
        return next
    }

    func file(_ number: UInt64) throws(FSError) -> OpenFile {
        guard case .file(let file)? = handles[number] else { throw .badHandle }
        return file
    }

    func directory(_ number: UInt64) throws(FSError) -> OpenDirectory {
        guard case .directory(let directory)? = handles[number] else { throw .badHandle }
        return directory
    }

    mutating func replaceDirectory(_ number: UInt64, _ directory: OpenDirectory) {
        handles[number] = .directory(directory)
    }

    mutating func remove(_ number: UInt64) -> Handle? {
        let removed = handles.removeValue(forKey: number)
        if case .file(let file)? = removed {
            Self.decrement(&openFiles, file.inode)
            if file.writable { Self.decrement(&writers, file.inode) }
        }
        return removed
    }

    mutating func removeAll() -> [Handle] {
        defer {
            handles = [:]
            writers = [:]
            openFiles = [:]
        }
        return Array(handles.values)
    }

    private static func decrement(_ counts: inout [UInt64: Int], _ inode: UInt64) {
        counts[inode]! -= 1
        if counts[inode] == 0 { counts[inode] = nil }
    }
}
