import Glibc
import VaultCore

/// Making and removing names: create, mknod, mkdir, symlink, link, unlink, rmdir, rename.
extension FileSystem {
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
                try truncateIfAsked(id, flags: flags, caller: caller)
            }
            let attributes = try fileAttributes(id)
            remember(id, parent: parent, &state)
            let keepsCache = state.inodes.opened(id, at: vault.contentVersion(id))
            let handle = openHandle(.file(HandleTable.OpenFile(inode: id, flags: flags, keepsCache: keepsCache)), &state)
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
}
