import Glibc
import VaultCore
import VaultCrypto

/// Open files: open, read, write, flush, release, fsync.
extension FileSystem {
    /// open(2) of an existing regular file. O_TRUNC (with write access) empties it (and takes
    /// set-ID bits from a caller other than root); O_APPEND makes every write of this handle go
    /// to the end.
    public func open(_ inode: UInt64, flags: Int32, caller: Caller) throws(FSError) -> UInt64 {
        let (handle, dropped) = try withState { state in
            try openable(inode)
            let dropped = try truncateIfAsked(inode, flags: flags, caller: caller)
            let keepsCache = state.inodes.opened(inode, at: vault.contentVersion(inode))
            return (openHandle(.file(HandleTable.OpenFile(inode: inode, flags: flags, keepsCache: keepsCache)), &state), dropped)
        }
        if dropped { attributesChangedUnseen(inode) }
        return handle
    }

    /// Whether the kernel may keep the page cache it holds of the handle's file (FUSE's
    /// keep_cache): the file's content has not changed since the kernel's last open of it. When
    /// it has (a write, a truncate, or a change the kernel did not make), the kernel drops its
    /// pages at this open, so nothing it cached before is read stale.
    public func keepsKernelCache(_ handle: UInt64) -> Bool {
        state.withLock { (try? $0.handles.file(handle).keepsCache) ?? false }
    }

    /// Whether a handle with write access is open on `inode`: only then may the kernel hold
    /// pages of it that a store into a shared mapping changed and that no write brought here yet.
    public func isOpenForWriting(_ inode: UInt64) -> Bool {
        state.withLock { !$0.closed && $0.handles.hasWriters(inode) }
    }

    /// Reads up to `count` bytes; fewer at the end of the file, none past it. Holes read as zeros.
    public func read(_ handle: UInt64, offset: UInt64, count: Int) throws(FSError) -> [UInt8] {
        try readPieces(handle, offset: offset, count: count).joined
    }

    /// The read as slices of the vault's decrypted chunks (see `Vault.readPieces`). Runs outside
    /// the file system's lock, so that reads decrypt in parallel: the handle stays valid, as
    /// the kernel sends no release while a read of it is under way.
    public func readPieces(_ handle: UInt64, offset: UInt64, count: Int) throws(FSError) -> [PlaintextSlice] {
        var chunks: [Int] = []
        return try readPieces(handle, offset: offset, count: count, chunksReadAtRandom: &chunks)
    }

    /// The same, adding the chunks it touched if it read at random (`Vault.readPieces`): what
    /// `pageFill` can then give the kernel.
    public func readPieces(_ handle: UInt64, offset: UInt64, count: Int,
                           chunksReadAtRandom: inout [Int]) throws(FSError) -> [PlaintextSlice] {
        let context = FSError.Context(wrongType: .isADirectory)
        let inode = try withState(context) { state in try state.handles.file(handle).inode }
        reads.add(1, ordering: .relaxed)
        do {
            return try vault.readPieces(inode, offset: offset, count: count, chunksReadAtRandom: &chunksReadAtRandom)
        } catch {
            throw FSError(error, context)
        }
    }

    /// Pages of a file's content to push into the kernel's page cache unasked.
    public struct PageFill: Sendable {
        public let inode: UInt64
        /// Page-aligned.
        public let offset: UInt64
        /// A copy of the chunk: plaintext, for the pusher to wipe.
        public var bytes: [UInt8]
        /// How many of `bytes` to push: whole pages, or up to the file's end.
        public let count: Int

        public mutating func wipe() { Vault.wipe(&bytes) }
    }

    /// The pages of chunk `index` of `inode` as the vault holds them now, if the kernel may be
    /// given them: the chunk is in memory and no handle with write access is open on the file
    /// (a writer's pages in the kernel may be newer than the vault's). Nil otherwise. Whoever
    /// pushes them must make every later change of the file wait until they are in (the reply
    /// to an open for writing or a truncate, the invalidation after a sync): a page pushed
    /// after such a change would be stale.
    public func pageFill(_ inode: UInt64, chunk index: Int) -> PageFill? {
        state.withLock { state in
            guard !state.closed, !state.handles.hasWriters(inode),
                  let (bytes, size) = vault.chunkForKernelCache(inode, index) else { return nil }
            let start = UInt64(index) * UInt64(Vault.Limits.payloadSize)
            guard size > start else { return nil }
            var count = min(bytes.count, Int(size - start))
            // A page short of a full one is filled only at the file's end (the kernel zeroes its rest).
            if start + UInt64(count) < size { count -= count % Self.pageSize }
            var fill = PageFill(inode: inode, offset: start, bytes: bytes, count: count)
            guard count > 0 else {
                fill.wipe()
                return nil
            }
            return fill
        }
    }

    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// A file at most this long is pushed whole into the kernel's page cache at an open for
    /// reading: one FUSE read reaches 128 KiB, so such a file is read in one request anyway.
    public static let openFillLimit = 128 << 10

    /// The whole of a small file (`openFillLimit`) being opened for reading as `handle`, as the
    /// vault holds it now, for the kernel's page cache; nil unless `handle` is the file's only
    /// open handle (so no read of it is under way: the push then never waits for a page the
    /// kernel locked for one, and may run on the open's own thread). The same rule as
    /// `pageFill`'s for whoever pushes it (nothing may change the file until the push is in,
    /// and no other open of it be answered), and then the open may keep the kernel's cache:
    /// every page of the file is the vault's.
    public func openFill(_ inode: UInt64, handle: UInt64) -> PageFill? {
        guard state.withLock({ !$0.closed && $0.handles.openCount(inode) == 1 && (try? $0.handles.file(handle).inode) == inode }),
              let bytes = vault.contentForKernelCache(inode, upTo: Self.openFillLimit) else { return nil }
        return PageFill(inode: inode, offset: 0, bytes: bytes, count: bytes.count)
    }

    /// Writes all of `bytes` at `offset`, or at the end for an O_APPEND handle; past the end
    /// leaves a hole that reads as zeros. Returns the count written.
    /// Like reads, it runs outside the file system's lock: a write that waits for write-behind
    /// room in the vault holds up no other request (the handle stays valid, as for reads).
    public func write(_ handle: UInt64, offset: UInt64, bytes: [UInt8]) throws(FSError) -> Int {
        try write(handle, offset: offset, bytes: bytes.span.bytes)
    }

    /// The same from the caller's memory (the FUSE request's buffer, not copied first).
    /// `caller`: whose change it is, for what it takes from the file (`dropsPrivileges`).
    public func write(_ handle: UInt64, offset: UInt64, bytes: RawSpan, changedBy caller: Caller = .root) throws(FSError) -> Int {
        let file = try withState { state in try state.handles.file(handle) }
        let drop = dropsPrivileges ? caller.changingContent : nil
        let dropped: Bool
        do {
            if file.append {
                dropped = try vault.append(file.inode, bytes: bytes, dropping: drop)
            } else {
                dropped = try vault.write(file.inode, offset: offset, bytes: bytes, dropping: drop)
            }
        } catch {
            throw FSError(error)
        }
        if dropped { attributesChangedUnseen(file.inode) }
        commitScheduler.noteChange()
        return bytes.byteCount
    }

    /// lseek(2) with SEEK_DATA or SEEK_HOLE (the kernel answers the other kinds itself), at
    /// the vault's chunk granularity: 256 KiB never written, or repaired away, is a hole.
    public func seek(_ handle: UInt64, from offset: Int64, whence: Int32) throws(FSError) -> UInt64 {
        let target: Vault.SeekTarget
        switch whence {
        case Self.seekData: target = .data
        case Self.seekHole: target = .hole
        default: throw .invalidArgument
        }
        let inode = try withState { state in try state.handles.file(handle).inode }
        guard offset >= 0 else { throw .noSuchOffset }
        do {
            guard let found = try vault.seek(inode, from: UInt64(offset), to: target) else { throw FSError.noSuchOffset }
            return found
        } catch {
            throw FSError(error)
        }
    }

    /// SEEK_DATA and SEEK_HOLE, the same on every Linux architecture; Glibc shows them only
    /// with _GNU_SOURCE, which Swift's module is built without.
    public static let seekData: Int32 = 3
    public static let seekHole: Int32 = 4

    /// The last descriptor of the handle is closed.
    public func release(_ handle: UInt64) {
        state.withLock { state in
            guard !state.closed, let removed = state.handles.remove(handle) else { return }
            vault.release(removed.inode)
        }
    }

    /// fsync/fdatasync/fsyncdir/syncfs: commits every change of the vault (a commit is atomic
    /// over the whole vault; syncing one file alone is not cheaper).
    public func synchronize() throws(FSError) {
        try checkOpen()
        try commitScheduler.commitNow()
    }
}
