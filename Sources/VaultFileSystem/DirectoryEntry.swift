/// One entry of a folder listing. `nextOffset` is the cookie that continues the listing after
/// this entry (readdir's `off`); listings start at offset 0 with "." and "..".
public struct DirectoryEntry: Equatable, Sendable {
    public var name: [UInt8]
    public var inode: UInt64
    public var type: FileType
    public var nextOffset: Int64

    public init(name: [UInt8], inode: UInt64, type: FileType, nextOffset: Int64) {
        self.name = name; self.inode = inode; self.type = type; self.nextOffset = nextOffset
    }
}
