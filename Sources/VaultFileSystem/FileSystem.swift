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
/// Thread-safe: requests from libfuse's threads are serialised by one lock (the vault has one
/// lock too, so nothing runs in parallel below anyway); operations that take several vault
/// calls (append, create-or-open, rename with its bookkeeping) are atomic.
public final class FileSystem: Sendable {
    public static let rootInode: UInt64 = Vault.rootID
    /// The block size `statfs` and `stat` report.
    public static let blockSize: UInt32 = 4096
    public static let maximumNameLength = 255
    /// The longest symbolic link target the format stores.
    public static let maximumLinkTarget = 4095
    /// The kernel's limit for one extended attribute value (XATTR_SIZE_MAX).
    public static let maximumAttributeValue = 65536

    public struct Options: Sendable {
        /// Seconds from the first uncommitted change to its commit (R-FS-2).
        public var commitDelay: Double
        /// Seconds between ticks of the background commit timer; nil for none (tests tick by hand).
        public var commitTickInterval: Double?

        public init(commitDelay: Double = 5, commitTickInterval: Double? = 0.5) {
            self.commitDelay = commitDelay
            self.commitTickInterval = commitTickInterval
        }
    }

    /// Total and available bytes of the disk that holds the storage (`StorageFolder.capacity()`).
    public typealias CapacityProvider = @Sendable () throws -> (total: UInt64, available: UInt64)

    public let vault: Vault
    public let commitScheduler: CommitScheduler
    private let clock: any VaultClock
    private let capacity: CapacityProvider
    private let state = Mutex(State())
    /// When a request last came in (the vault clock's nanoseconds): the idle timeout reads it.
    private let activity: Atomic<Int64>

    private struct State {
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
        commitScheduler = CommitScheduler(delay: options.commitDelay, clock: clock) { [vault] in try vault.commit() }
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
    /// item; the handle is not needed).
    public func setAttributes(_ inode: UInt64, _ changes: AttributeChanges) throws(FSError) -> FileAttributes {
        try withState { _ in
            if let size = changes.size {
                guard try vault.attributes(inode).type == .file else {
                    throw try vault.attributes(inode).type == .folder ? FSError.isADirectory : FSError.invalidArgument
                }
                try vault.truncate(inode, size: size)
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
                commitScheduler.noteChange()
            }
            return try fileAttributes(inode)
        }
    }

    // MARK: Making and removing names

    /// Creates and opens a regular file (open with O_CREAT). Without O_EXCL an existing file is
    /// opened instead (O_TRUNC applies then). The kernel gets one lookup of the inode.
    public func create(_ parent: UInt64, _ name: [UInt8], mode: UInt32, flags: Int32,
                       caller: Caller) throws(FSError) -> (attributes: FileAttributes, handle: UInt64) {
        try withState { state in
            try Self.checkName(name)
            let owner = try ownership(parent: parent, caller: caller)
            let id: UInt64
            do {
                id = try vault.create(.file, in: parent, named: name, mode: mode & ~caller.umask & 0o7777,
                                      uid: owner.uid, gid: owner.gid)
                commitScheduler.noteChange()
            } catch VaultError.exists where flags & O_EXCL == 0 {
                id = try vault.lookup(parent, name)
                try openable(id)
                try truncateIfAsked(id, flags: flags)
            }
            let handle = openHandle(.file(HandleTable.OpenFile(inode: id, flags: flags)), &state)
            let attributes = try fileAttributes(id)
            remember(id, parent: parent, &state)
            return (attributes, handle)
        }
    }

    /// mknod(2): a regular file, FIFO, socket or device node (`mode` carries the type bits).
    public func makeNode(_ parent: UInt64, _ name: [UInt8], mode: UInt32, rdev: UInt64,
                         caller: Caller) throws(FSError) -> FileAttributes {
        guard let type = FileType(mode: mode), type != .directory, type != .symbolicLink else { throw .invalidArgument }
        let isDevice = type == .characterDevice || type == .blockDevice
        return try makeItem(type, parent, name, mode: mode & ~caller.umask, rdev: isDevice ? rdev : 0, caller: caller)
    }

    public func makeDirectory(_ parent: UInt64, _ name: [UInt8], mode: UInt32, caller: Caller) throws(FSError) -> FileAttributes {
        try makeItem(.directory, parent, name, mode: mode & ~caller.umask, caller: caller)
    }

    public func makeSymbolicLink(_ parent: UInt64, _ name: [UInt8], target: [UInt8], caller: Caller) throws(FSError) -> FileAttributes {
        guard target.count <= Self.maximumLinkTarget else { throw .nameTooLong }
        guard !target.isEmpty, !target.contains(0) else { throw .invalidArgument }
        return try makeItem(.symbolicLink, parent, name, mode: 0o777, target: target, caller: caller)
    }

    public func readSymbolicLink(_ inode: UInt64) throws(FSError) -> [UInt8] {
        try withState { _ in try vault.symlinkTarget(inode) }
    }

    /// A hard link: another name for `inode` (not a folder).
    public func link(_ inode: UInt64, into parent: UInt64, named name: [UInt8]) throws(FSError) -> FileAttributes {
        try withState(FSError.Context(tooLarge: .tooManyLinks, isAFolder: .notPermitted)) { state in
            try Self.checkName(name)
            try vault.link(inode, into: parent, named: name)
            commitScheduler.noteChange()
            let attributes = try fileAttributes(inode)
            remember(inode, parent: parent, &state)
            return attributes
        }
    }

    /// unlink(2). The item goes when its last name does, unless it is open or known.
    public func unlink(_ parent: UInt64, _ name: [UInt8]) throws(FSError) {
        try withState { _ in
            try Self.checkName(name)
            try vault.remove(name, from: parent, folder: false)
            commitScheduler.noteChange()
        }
    }

    /// rmdir(2): ENOTEMPTY for a folder with entries, ENOTDIR for anything else.
    public func removeDirectory(_ parent: UInt64, _ name: [UInt8]) throws(FSError) {
        try withState { _ in
            try Self.checkName(name)
            try vault.remove(name, from: parent, folder: true)
            commitScheduler.noteChange()
        }
    }

    /// rename(2) / renameat2(2) flags.
    public struct RenameFlags: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// Fail with EEXIST instead of replacing a target.
        public static let noReplace = RenameFlags(rawValue: 1)
        /// Swap two names atomically: not supported (EINVAL).
        public static let exchange = RenameFlags(rawValue: 2)
        /// Leave a whiteout (overlay file systems): not supported (EINVAL).
        public static let whiteout = RenameFlags(rawValue: 4)
    }

    /// rename(2) in one step: a target (file over file, empty folder over folder) is replaced
    /// atomically, and stays readable for whoever has it open.
    public func rename(_ parent: UInt64, _ name: [UInt8], to newParent: UInt64, _ newName: [UInt8],
                       flags: RenameFlags = []) throws(FSError) {
        guard flags.subtracting(.noReplace).isEmpty else { throw .invalidArgument }
        try withState { state in
            try Self.checkName(name)
            try Self.checkName(newName)
            let id = try vault.lookup(parent, name)
            try vault.rename(name, in: parent, to: newName, in: newParent, replace: !flags.contains(.noReplace))
            commitScheduler.noteChange()
            state.inodes.moved(id, to: newParent)
        }
    }

    // MARK: Files

    /// open(2) of an existing regular file. O_TRUNC (with write access) empties it; O_APPEND
    /// makes every write of this handle go to the end.
    public func open(_ inode: UInt64, flags: Int32) throws(FSError) -> UInt64 {
        try withState { state in
            try openable(inode)
            try truncateIfAsked(inode, flags: flags)
            return openHandle(.file(HandleTable.OpenFile(inode: inode, flags: flags)), &state)
        }
    }

    /// Reads up to `count` bytes; fewer at the end of the file, none past it. Holes read as zeros.
    public func read(_ handle: UInt64, offset: UInt64, count: Int) throws(FSError) -> [UInt8] {
        Array(try readPieces(handle, offset: offset, count: count).joined())
    }

    /// The read as slices of the vault's decrypted chunks (see `Vault.readPieces`). Runs outside
    /// the file system's lock, so that reads decrypt in parallel: the handle stays valid, as
    /// the kernel sends no release while a read of it is under way.
    public func readPieces(_ handle: UInt64, offset: UInt64, count: Int) throws(FSError) -> [ArraySlice<UInt8>] {
        let context = FSError.Context(wrongType: .isADirectory)
        let inode = try withState(context) { state in try state.handles.file(handle).inode }
        do { return try vault.readPieces(inode, offset: offset, count: count) } catch { throw FSError(error, context) }
    }

    /// Writes all of `bytes` at `offset`, or at the end for an O_APPEND handle; past the end
    /// leaves a hole that reads as zeros. Returns the count written.
    public func write(_ handle: UInt64, offset: UInt64, bytes: [UInt8]) throws(FSError) -> Int {
        try withState { state in
            let file = try state.handles.file(handle)
            let position = file.append ? try vault.attributes(file.inode).size : offset
            try vault.write(file.inode, offset: position, bytes: bytes)
            commitScheduler.noteChange()
            return bytes.count
        }
    }

    /// close(2) of one descriptor of the handle: nothing to do, changes are in the vault already.
    public func flush(_ handle: UInt64) throws(FSError) {
        try withState { state in _ = try state.handles.file(handle) }
    }

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

    // MARK: Folders

    public func openDirectory(_ inode: UInt64) throws(FSError) -> UInt64 {
        try withState { state in
            let entries = try vault.contents(ofFolder: inode)
            let parent = inode == Self.rootInode ? Self.rootInode : state.inodes.parent(inode) ?? Self.rootInode
            return openHandle(.directory(HandleTable.OpenDirectory(inode: inode, entries: entries, parent: parent)), &state)
        }
    }

    /// Up to `limit` entries from `offset` (0 starts with "." and ".."; then each entry's
    /// `nextOffset`). Offset 0 lists the folder again (rewinddir).
    public func readDirectory(_ handle: UInt64, offset: Int64, limit: Int) throws(FSError) -> [DirectoryEntry] {
        try withState { state in try listing(handle, offset: offset, limit: limit, &state).entries }
    }

    /// readdirplus: the entries with their attributes, so that `ls -l` needs no lookup per
    /// entry. Each entry but "." and ".." counts as a lookup, as the kernel counts it; the
    /// adapter forgets those that did not fit its buffer.
    public func readDirectoryPlus(_ handle: UInt64, offset: Int64, limit: Int) throws(FSError)
        -> [(entry: DirectoryEntry, attributes: FileAttributes?)] {
        try withState { state in
            let (folder, entries) = try listing(handle, offset: offset, limit: limit, &state)
            return try entries.map { entry in
                guard entry.name != [0x2E], entry.name != [0x2E, 0x2E] else { return (entry, nil) }
                let attributes = try fileAttributes(entry.inode)
                remember(entry.inode, parent: folder, &state)
                return (entry, attributes)
            }
        }
    }

    private func listing(_ handle: UInt64, offset: Int64, limit: Int, _ state: inout State) throws -> (folder: UInt64, entries: [DirectoryEntry]) {
        var directory = try state.handles.directory(handle)
        if offset == 0 && !directory.fresh { directory.entries = try vault.contents(ofFolder: directory.inode) }
        if directory.fresh || offset == 0 {
            directory.fresh = false
            state.handles.replaceDirectory(handle, directory)
        }
        var result: [DirectoryEntry] = []
        var index = max(0, Int(clamping: offset))
        while result.count < limit, index < directory.entries.count + 2 {
            defer { index += 1 }
            let next = Int64(index + 1)
            switch index {
            case 0: result.append(DirectoryEntry(name: [0x2E], inode: directory.inode, type: .directory, nextOffset: next))
            case 1: result.append(DirectoryEntry(name: [0x2E, 0x2E], inode: directory.parent, type: .directory, nextOffset: next))
            default:
                let entry = directory.entries[index - 2]
                // An entry removed since the listing was taken is left out.
                guard let attributes = try? vault.attributes(entry.id) else { continue }
                result.append(DirectoryEntry(name: entry.name, inode: entry.id, type: FileType(attributes.type), nextOffset: next))
            }
        }
        return (directory.inode, result)
    }

    public func releaseDirectory(_ handle: UInt64) { release(handle) }

    // MARK: Extended attributes

    /// The attributes that carry POSIX ACLs. The kernel passes them through to a FUSE file
    /// system that did not ask for ACL support (on the host's user namespace); storing them would
    /// make `cp -a` believe the ACL, hence the mode, was set and skip its chmod. No ACL support:
    /// setting one is EOPNOTSUPP, as on a file system mounted `noacl`, and reading one ENODATA.
    public static let accessControlListNames: Set<[UInt8]> = [Array("system.posix_acl_access".utf8),
                                                              Array("system.posix_acl_default".utf8)]

    public func extendedAttribute(_ inode: UInt64, _ name: [UInt8]) throws(FSError) -> [UInt8] {
        try withState(FSError.Context(notFound: .noAttribute)) { _ in
            try Self.checkAttributeName(name)
            return try vault.extendedAttribute(inode, name)
        }
    }

    public func extendedAttributeNames(_ inode: UInt64) throws(FSError) -> [[UInt8]] {
        try withState { _ in try vault.extendedAttributeNames(inode) }
    }

    /// setxattr(2): `create` is XATTR_CREATE (EEXIST if present), `replace` XATTR_REPLACE
    /// (ENODATA if absent).
    public func setExtendedAttribute(_ inode: UInt64, _ name: [UInt8], _ value: [UInt8],
                                     create: Bool = false, replace: Bool = false) throws(FSError) {
        guard !(create && replace) else { throw .invalidArgument }
        guard !Self.accessControlListNames.contains(name) else { throw .notSupported }
        guard value.count <= Self.maximumAttributeValue else { throw .attributeTooLarge }
        try withState(FSError.Context(notFound: .noAttribute, tooLarge: .noSpace)) { _ in
            try Self.checkAttributeName(name)
            _ = try vault.attributes(inode)
            try vault.setExtendedAttribute(inode, name, value, create: create, replace: replace)
            commitScheduler.noteChange()
        }
    }

    public func removeExtendedAttribute(_ inode: UInt64, _ name: [UInt8]) throws(FSError) {
        try withState(FSError.Context(notFound: .noAttribute)) { _ in
            try Self.checkAttributeName(name)
            _ = try vault.attributes(inode)
            try vault.setExtendedAttribute(inode, name, nil)
            commitScheduler.noteChange()
        }
    }

    // MARK: The volume

    /// statfs(2): the disk under the storage, scaled to payload (each 256 KiB of content costs
    /// one storage file of 256 KiB + 48 bytes), in 4 KiB blocks; items in use, and as many more
    /// possible as there are free blocks.
    public func statistics() throws(FSError) -> VolumeStatistics {
        try withState { state in
            let (total, available) = try capacity()
            func blocks(_ bytes: UInt64) -> UInt64 {
                (bytes / UInt64(Self.storageFileSize)) * UInt64(Self.payloadSize / Int(Self.blockSize))
                    + (bytes % UInt64(Self.storageFileSize)) / UInt64(Self.blockSize)
            }
            // Every item the vault holds, also those unlinked but still open or known.
            let used = UInt64(vault.itemCount)
            let free = blocks(available)
            return VolumeStatistics(blockSize: Self.blockSize, totalBlocks: blocks(total), freeBlocks: free, availableBlocks: free,
                                    totalFiles: used + free, freeFiles: free, maximumNameLength: UInt32(Self.maximumNameLength))
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

    // MARK: Helpers

    static let payloadSize = 262_144
    static let storageFileSize = 262_192

    /// When the file system was last used.
    public var lastActivity: Int64 { activity.load(ordering: .relaxed) }

    private func withState<R: Sendable>(_ context: FSError.Context = .general,
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

    private func checkOpen() throws(FSError) {
        if isClosed { throw .vault(.locked) }
    }

    private static func checkName(_ name: [UInt8]) throws(FSError) {
        guard name.count <= maximumNameLength else { throw .nameTooLong }
        guard !name.isEmpty, !name.contains(0), !name.contains(0x2F), name != [0x2E], name != [0x2E, 0x2E] else {
            throw .invalidArgument
        }
    }

    private static func checkAttributeName(_ name: [UInt8]) throws(FSError) {
        guard !name.isEmpty, name.count <= maximumNameLength, !name.contains(0) else { throw .attributeNameOutOfRange }
    }

    private func makeItem(_ type: FileType, _ parent: UInt64, _ name: [UInt8], mode: UInt32, rdev: UInt64 = 0,
                          target: [UInt8] = [], caller: Caller) throws(FSError) -> FileAttributes {
        try withState(FSError.Context(tooLarge: type == .symbolicLink ? .nameTooLong : .noSpace)) { state in
            try Self.checkName(name)
            let owner = try ownership(parent: parent, caller: caller)
            var permissions = mode & 0o7777
            if type == .directory, owner.inheritsGroup { permissions |= UInt32(S_ISGID) }
            let id = try vault.create(type.itemType, in: parent, named: name, mode: permissions, uid: owner.uid, gid: owner.gid,
                                      rdev: rdev, target: target)
            commitScheduler.noteChange()
            let attributes = try fileAttributes(id)
            remember(id, parent: parent, &state)
            return attributes
        }
    }

    /// The owner of a new item: the caller, with the folder's group if the folder is
    /// set-group-ID (then a new folder is set-group-ID too).
    private func ownership(parent: UInt64, caller: Caller) throws -> (uid: UInt32, gid: UInt32, inheritsGroup: Bool) {
        let folder = try vault.attributes(parent)
        guard folder.type == .folder else { throw FSError.notADirectory }
        if folder.mode & UInt32(S_ISGID) != 0 { return (caller.uid, folder.gid, true) }
        return (caller.uid, caller.gid, false)
    }

    private func openable(_ id: UInt64) throws {
        switch try vault.attributes(id).type {
        case .file: return
        case .folder: throw FSError.isADirectory
        default: throw FSError.invalidArgument
        }
    }

    private func truncateIfAsked(_ id: UInt64, flags: Int32) throws {
        guard flags & O_TRUNC != 0, flags & O_ACCMODE != O_RDONLY else { return }
        try vault.truncate(id, size: 0)
        commitScheduler.noteChange()
    }

    private func openHandle(_ handle: HandleTable.Handle, _ state: inout State) -> UInt64 {
        vault.hold(handle.inode)
        return state.handles.add(handle)
    }

    private func remember(_ id: UInt64, parent: UInt64, _ state: inout State) {
        guard id != Self.rootInode else { return }
        if state.inodes.remember(id, parent: parent) { vault.hold(id) }
    }

    private func fileAttributes(_ id: UInt64) throws -> FileAttributes {
        let item = try vault.attributes(id)
        let blockBytes = UInt64(Self.blockSize)
        let blocks = item.type == .file ? (item.size / blockBytes + (item.size % blockBytes == 0 ? 0 : 1)) * (blockBytes / 512) : 0
        return FileAttributes(inode: id, type: FileType(item.type), permissions: item.mode & 0o7777,
                              linkCount: UInt32(clamping: item.linkCount), uid: item.uid, gid: item.gid, rdev: item.rdev,
                              size: item.size, blocks: blocks, blockSize: Self.blockSize,
                              accessTime: Timestamp(nanosecondsSinceEpoch: item.atime),
                              modificationTime: Timestamp(nanosecondsSinceEpoch: item.mtime),
                              changeTime: Timestamp(nanosecondsSinceEpoch: item.ctime))
    }
}
