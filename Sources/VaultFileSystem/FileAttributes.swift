/// What `stat` reports for an inode.
public struct FileAttributes: Equatable, Sendable {
    public var inode: UInt64
    public var type: FileType
    /// Permission bits, `07777` at most.
    public var permissions: UInt32
    public var linkCount: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var rdev: UInt64
    public var size: UInt64
    /// 512-byte units, from the size (holes are counted as if stored: the vault does not say which
    /// chunks of a file exist).
    public var blocks: UInt64
    /// The preferred I/O size.
    public var blockSize: UInt32
    public var accessTime: Timestamp
    public var modificationTime: Timestamp
    public var changeTime: Timestamp

    /// `st_mode`: the type bits and the permissions.
    public var mode: UInt32 { type.modeBits | permissions }

    public init(inode: UInt64, type: FileType, permissions: UInt32, linkCount: UInt32, uid: UInt32, gid: UInt32,
                rdev: UInt64, size: UInt64, blocks: UInt64, blockSize: UInt32,
                accessTime: Timestamp, modificationTime: Timestamp, changeTime: Timestamp) {
        self.inode = inode; self.type = type; self.permissions = permissions; self.linkCount = linkCount
        self.uid = uid; self.gid = gid; self.rdev = rdev; self.size = size; self.blocks = blocks
        self.blockSize = blockSize; self.accessTime = accessTime; self.modificationTime = modificationTime
        self.changeTime = changeTime
    }
}
