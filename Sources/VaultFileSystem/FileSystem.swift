import Glibc
import Synchronization
import VaultCore

/// A POSIX file system over an open `Vault`, shaped like FUSE's low-level API but independent of
/// libfuse, so that it is tested without a mount.
///
/// Inode numbers are vault item ids (the root folder is 1, FUSE's root id). Inodes handed to the
/// kernel are counted until `forget`; open files and folders are handles. Both hold their vault
/// item, so an unlinked file stays usable while it is open or known. Permission checks are the
/// kernel's (`default_permissions`). Changes are committed by a `CommitScheduler`: on `fsync`, at
/// `close()`, and a few seconds after the first uncommitted change.
///
/// Thread-safe: requests from libfuse's threads are serialised by one lock for inodes and handles;
/// operations that take several vault calls (create-or-open, rename with its bookkeeping) are
/// atomic under it. Reads and writes only look their handle up under it and call the vault
/// outside it (one lock at a time): a write waiting for write-behind room stops no other request.
/// The requests are split by concern: `FileSystem+Names`, `+Files`, `+Folders`,
/// `+ExtendedAttributes`.
public final class FileSystem: Sendable {
    public static let rootInode: UInt64 = Vault.rootID
    /// The block size `statfs` and `stat` report.
    public static let blockSize: UInt32 = 4096
    public static let maximumNameLength = Vault.Limits.maxNameLength
    /// The longest symbolic link target the format stores.
    public static let maximumLinkTarget = Vault.Limits.maxSymlinkLength
    /// The kernel's limit for one extended attribute value (XATTR_SIZE_MAX).
    public static let maximumAttributeValue = 65536

    public struct Options: Sendable {
        /// Seconds from the first uncommitted change to its commit (R-FS-2).
        public var commitDelay: Double
        /// Seconds between ticks of the background commit timer; nil for none (tests tick by hand).
        public var commitTickInterval: Double?
        /// Told the outcome of every commit (nil: it succeeded), on the committing thread: the
        /// mount daemon reports failures to the system log.
        public var commitObserver: (@Sendable (FSError?) -> Void)?

        public init(commitDelay: Double = 5, commitTickInterval: Double? = 0.5,
                    commitObserver: (@Sendable (FSError?) -> Void)? = nil) {
            self.commitDelay = commitDelay
            self.commitTickInterval = commitTickInterval
            self.commitObserver = commitObserver
        }
    }

    /// Total, free and available bytes of the disk that holds the storage (`StorageFolder.capacity()`).
    public typealias CapacityProvider = @Sendable () throws -> (total: UInt64, free: UInt64, available: UInt64)

    public let vault: Vault
    public let commitScheduler: CommitScheduler
    let clock: any VaultClock
    private let capacity: CapacityProvider
    let state = Mutex(State())
    /// When a request last came in (the vault clock's nanoseconds): the idle timeout reads it.
    private let activity: Atomic<Int64>
    let reads = Atomic<Int>(0)
    /// Read requests served (the tests' count of what reached the daemon).
    public var readCount: Int { reads.load(ordering: .relaxed) }
    let attributeReads = Atomic<Int>(0)
    /// getxattr requests served (the kernel asks for `security.capability` before writes, `ls
    /// -l` for ACLs and labels).
    public var attributeReadCount: Int { attributeReads.load(ordering: .relaxed) }
    private let privilegesDropped = Atomic<Bool>(false)
    private let unseenChange = Mutex<(@Sendable (UInt64) -> Void)?>(nil)

    struct State {
        var inodes = InodeTable()
        var handles = HandleTable()
        var closed = false
    }

    /// Serves `vault`. `clock` is the one the vault was opened with (UTIME_NOW and the commit
    /// delay read it). Starts the background commit timer unless `options` says not to.
    public init(vault: Vault, clock: any VaultClock = SystemClock(), options: Options = Options(),
                capacity: @escaping CapacityProvider) {
        self.vault = vault
        self.clock = clock
        self.capacity = capacity
        activity = Atomic(clock.now())
        let observer = options.commitObserver
        commitScheduler = CommitScheduler(delay: options.commitDelay, clock: clock) { [vault] in
            do { try vault.commit() } catch {
                observer?(FSError(error))
                throw error
            }
            observer?(nil)
        }
        if let interval = options.commitTickInterval { commitScheduler.start(interval: interval) }
    }

    deinit { commitScheduler.stop() }

    // MARK: Inodes

    /// Finds `name` in folder `parent`; the kernel now knows the inode (one more lookup).
    public func lookup(_ parent: UInt64, _ name: [UInt8]) throws(FSError) -> FileAttributes {
        try withState { state in
            try Self.checkName(name)
            let id = try vault.lookup(parent, name)
            let attributes = try fileAttributes(id)
            remember(id, parent: parent, &state)
            return attributes
        }
    }

    /// The kernel dropped `count` lookups of `inode`.
    public func forget(_ inode: UInt64, count: UInt64) {
        state.withLock { state in
            guard !state.closed, state.inodes.forget(inode, count: count) else { return }
            // The item goes if that was the last reason to keep it.
            vault.release(inode)
        }
    }

    /// How many lookups of `inode` the kernel holds (for tests and diagnostics).
    public func lookupCount(_ inode: UInt64) -> UInt64 { state.withLock { $0.inodes.lookups(inode) } }

    /// Open file and folder handles (for tests and diagnostics).
    public var openHandleCount: Int { state.withLock { $0.handles.count } }

    public func attributes(_ inode: UInt64) throws(FSError) -> FileAttributes {
        try withState { _ in try fileAttributes(inode) }
    }

    /// chmod, chown, truncate/ftruncate and utimens in one (for ftruncate the inode says which
    /// item; the handle is not needed). `caller`: whose change it is, for what a truncate or a
    /// change of owner takes from the item (`dropsPrivileges`).
    public func setAttributes(_ inode: UInt64, _ changes: AttributeChanges, changedBy caller: Caller = .root) throws(FSError) -> FileAttributes {
        let drop = dropsPrivileges ? Self.privilegeDrop(changes, caller) : nil
        return try withState { _ in
            if let size = changes.size {
                guard try vault.attributes(inode).type == .file else {
                    throw try vault.attributes(inode).type == .folder ? FSError.isADirectory : FSError.invalidArgument
                }
                try vault.truncate(inode, size: size, dropping: changes.uid == nil && changes.gid == nil ? drop : nil)
                commitScheduler.noteChange()
            }
            if changes.changesMetadata {
                let now = clock.now()
                func resolve(_ change: AttributeChanges.TimeChange?) -> Int64? {
                    switch change {
                    case nil: nil
                    case .now: now
                    case .set(let time): time.nanosecondsSinceEpoch
                    }
                }
                try vault.setAttributes(inode, mode: changes.mode.map { $0 & 0o7777 }, uid: changes.uid, gid: changes.gid,
                                        atime: resolve(changes.accessTime), mtime: resolve(changes.modificationTime))
                if let drop, changes.uid != nil || changes.gid != nil { try vault.dropPrivileges(inode, drop) }
                commitScheduler.noteChange()
            }
            return try fileAttributes(inode)
        }
    }

    /// Whether the kernel leaves dropping set-ID bits and capabilities on write, truncate and
    /// chown to this file system (FUSE_HANDLE_KILLPRIV_V2), as the mount's INIT reply decided.
    /// An open with O_TRUNC drops them either way: the kernel never does (atomic O_TRUNC).
    public var dropsPrivileges: Bool {
        get { privilegesDropped.load(ordering: .acquiring) }
        set { privilegesDropped.store(newValue, ordering: .releasing) }
    }

    /// Told of an item whose attributes this file system changed with no reply that carries
    /// them (a write or an open with O_TRUNC that dropped set-ID bits or a capability): the
    /// mount makes the kernel forget its copy, which it would otherwise show for a second.
    public func whenAttributesChangeUnseen(_ body: @escaping @Sendable (UInt64) -> Void) {
        unseenChange.withLock { $0 = body }
    }

    func attributesChangedUnseen(_ id: UInt64) { unseenChange.withLock { $0 }?(id) }

    /// What a setattr takes from the item: the kernel marks a truncate by a caller without
    /// CAP_FSETID, and every chown of a non-folder (`dropsSetIDs`); capabilities go in any case.
    static func privilegeDrop(_ changes: AttributeChanges, _ caller: Caller) -> PrivilegeDrop? {
        if changes.uid != nil || changes.gid != nil {
            return PrivilegeDrop(isOwnerChange: true, unprivilegedGroup: caller.changingContent.unprivilegedGroup)
        }
        guard changes.size != nil else { return nil }
        return PrivilegeDrop(unprivilegedGroup: changes.dropsSetIDs ? caller.gid : nil)
    }

    // MARK: The volume

    /// statfs(2): the disk under the storage, scaled to payload (each 256 KiB of content costs
    /// one storage file of 256 KiB + 48 bytes), in 4 KiB blocks; items in use, and as many more
    /// possible as there are free blocks.
    public func statistics() throws(FSError) -> VolumeStatistics {
        try withState { state in
            let (total, free, available) = try capacity()
            func blocks(_ bytes: UInt64) -> UInt64 {
                (bytes / UInt64(Vault.Limits.fileSize)) * UInt64(Vault.Limits.payloadSize / Int(Self.blockSize))
                    + (bytes % UInt64(Vault.Limits.fileSize)) / UInt64(Self.blockSize)
            }
            // Every item the vault holds, also those unlinked but still open or known.
            let used = UInt64(vault.itemCount)
            // Root's reserve on that disk is root's here too: free but not available (df).
            let availableBlocks = blocks(available)
            return VolumeStatistics(blockSize: Self.blockSize, totalBlocks: blocks(total), freeBlocks: blocks(free),
                                    availableBlocks: availableBlocks, totalFiles: used + availableBlocks, freeFiles: availableBlocks,
                                    maximumNameLength: UInt32(Self.maximumNameLength))
        }
    }

    /// Commits, then locks the vault (keys and plaintext erased). Every later call fails with
    /// EIO. Safe to call more than once.
    public func close() throws(FSError) {
        commitScheduler.stop()
        do {
            try state.withLock { state in
                guard !state.closed else { return }
                state.closed = true
                _ = state.handles.removeAll()
                _ = state.inodes.removeAll()
                try vault.lock()
            }
        } catch {
            throw FSError(error)
        }
    }

    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Runs `body` with no request between two of its vault calls: a sync's merge replaces the
    /// vault's tree under this file system. Its errors pass through; a closed file system
    /// throws `FSError.vault(.locked)`.
    public func holdingRequests<R: Sendable>(_ body: () throws -> R) throws -> R {
        try state.withLock { state in
            guard !state.closed else { throw FSError.vault(.locked) }
            return try body()
        }
    }

    // MARK: Helpers


    /// When the file system was last used.
    public var lastActivity: Int64 { activity.load(ordering: .relaxed) }

    func withState<R: Sendable>(_ context: FSError.Context = .general,
                                        _ body: (inout State) throws -> R) throws(FSError) -> R {
        activity.store(clock.now(), ordering: .relaxed)
        do {
            return try state.withLock { state in
                guard !state.closed else { throw FSError.vault(.locked) }
                return try body(&state)
            }
        } catch {
            throw FSError(error, context)
        }
    }

    func checkOpen() throws(FSError) {
        if isClosed { throw .vault(.locked) }
    }

    static func checkName(_ name: [UInt8]) throws(FSError) {
        guard name.count <= maximumNameLength else { throw .nameTooLong }
        guard !name.isEmpty, !name.contains(0), !name.contains(0x2F), name != [0x2E], name != [0x2E, 0x2E] else {
            throw .invalidArgument
        }
    }


    func openable(_ id: UInt64) throws {
        switch try vault.attributes(id).type {
        case .file: return
        case .folder: throw FSError.isADirectory
        default: throw FSError.invalidArgument
        }
    }

    /// O_TRUNC of an open: the kernel leaves it to us (atomic O_TRUNC), and with it what it
    /// would take from the file for a truncate (`Caller.changingContent`).
    /// True if that dropped something.
    @discardableResult
    func truncateIfAsked(_ id: UInt64, flags: Int32, caller: Caller) throws -> Bool {
        guard flags & O_TRUNC != 0, flags & O_ACCMODE != O_RDONLY else { return false }
        let dropped = try vault.truncate(id, size: 0, dropping: caller.changingContent)
        commitScheduler.noteChange()
        return dropped
    }

    func openHandle(_ handle: HandleTable.Handle, _ state: inout State) -> UInt64 {
        vault.hold(handle.inode)
        return state.handles.add(handle)
    }

    func remember(_ id: UInt64, parent: UInt64, _ state: inout State) {
        guard id != Self.rootInode else { return }
        if state.inodes.remember(id, parent: parent) { vault.hold(id) }
    }

    func fileAttributes(_ id: UInt64) throws -> FileAttributes {
        let item = try vault.attributes(id)
        let blockBytes = UInt64(Self.blockSize)
        let allocated = item.allocatedBytes
        let blocks = (allocated / blockBytes + (allocated % blockBytes == 0 ? 0 : 1)) * (blockBytes / 512)
        return FileAttributes(inode: id, type: FileType(item.type), permissions: item.mode & 0o7777,
                              linkCount: UInt32(clamping: item.linkCount), uid: item.uid, gid: item.gid, rdev: item.rdev,
                              size: item.size, blocks: blocks, blockSize: Self.blockSize,
                              accessTime: Timestamp(nanosecondsSinceEpoch: item.atime),
                              modificationTime: Timestamp(nanosecondsSinceEpoch: item.mtime),
                              changeTime: Timestamp(nanosecondsSinceEpoch: item.ctime))
    }
}
