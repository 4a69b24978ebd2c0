/// What `statfs` reports: space of the disk under the storage, in blocks of `blockSize`, scaled
/// to the payload a block file carries; and items in use and creatable.
public struct VolumeStatistics: Equatable, Sendable {
    public var blockSize: UInt32
    public var totalBlocks: UInt64
    public var freeBlocks: UInt64
    public var availableBlocks: UInt64
    public var totalFiles: UInt64
    public var freeFiles: UInt64
    public var maximumNameLength: UInt32

    public init(blockSize: UInt32, totalBlocks: UInt64, freeBlocks: UInt64, availableBlocks: UInt64,
                totalFiles: UInt64, freeFiles: UInt64, maximumNameLength: UInt32) {
        self.blockSize = blockSize; self.totalBlocks = totalBlocks; self.freeBlocks = freeBlocks
        self.availableBlocks = availableBlocks; self.totalFiles = totalFiles; self.freeFiles = freeFiles
        self.maximumNameLength = maximumNameLength
    }
}
