/// One number an observer can read off a storage file, directly or derived (R-DEN-1 measures
/// each). Times are in seconds since the epoch.
public enum MetadataFeature: String, CaseIterable, Sendable {
    case size, mode, uid, gid, links
    /// The name read as a number (its first 8 base32 characters).
    case name
    /// Position in the folder's listing.
    case order
    case inode
    case atime, mtime, ctime, btime
    case ctimeMinusMtime = "ctime-mtime"
    case atimeMinusMtime = "atime-mtime"
    case atimeAfterMtime = "atime>mtime"
    case mtimeMinusBtime = "mtime-btime"
    case ctimeMinusBtime = "ctime-btime"
    /// How many pieces the file's blocks lie in on the disk.
    case extents
    /// Where the file's first block lies on the device.
    case block

    /// Time fields: where bursts of files made or changed together show sessions.
    public static let times: [MetadataFeature] = [.btime, .ctime, .mtime, .atime]

    public var isTime: Bool { Self.times.contains(self) }

    /// The feature's value for a file; nil where the file system lacks it (birth time, extents).
    public func value(of file: StorageScan.File) -> Double? {
        let m = file.metadata
        func seconds(_ ns: Int64) -> Double { Double(ns) / 1e9 }
        switch self {
        case .size: return Double(m.size)
        case .mode: return Double(m.mode)
        case .uid: return Double(m.uid)
        case .gid: return Double(m.gid)
        case .links: return Double(m.links)
        case .name: return Self.nameValue(file.name)
        case .order: return Double(file.order)
        case .inode: return Double(m.inode)
        case .atime: return seconds(m.access)
        case .mtime: return seconds(m.modification)
        case .ctime: return seconds(m.change)
        case .btime: return m.birth.map(seconds)
        case .ctimeMinusMtime: return seconds(m.change - m.modification)
        case .atimeMinusMtime: return seconds(m.access - m.modification)
        case .atimeAfterMtime: return m.access > m.modification ? 1 : 0
        case .mtimeMinusBtime: return m.birth.map { seconds(m.modification - $0) }
        case .ctimeMinusBtime: return m.birth.map { seconds(m.change - $0) }
        case .extents: return file.extents.map(Double.init)
        case .block: return file.firstBlock.map(Double.init)
        }
    }

    static func nameValue(_ name: String) -> Double {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
        return name.utf8.prefix(8).reduce(0.0) { $0 * 32 + Double(alphabet.firstIndex(of: $1) ?? 0) }
    }
}
