/// What a `setattr` (chmod, chown, truncate, utimens) changes; nil leaves a field as it is
/// (`UTIME_OMIT` for times). The change time always moves to now.
public struct AttributeChanges: Equatable, Sendable {
    /// A new time for atime or mtime: the file system's clock (`UTIME_NOW`) or a given time.
    public enum TimeChange: Equatable, Sendable {
        case now
        case set(Timestamp)

        /// The magic `tv_nsec` values of `utimensat(2)`.
        public static let utimeNow: Int64 = (1 << 30) - 1
        public static let utimeOmit: Int64 = (1 << 30) - 2

        /// Reads a `timespec` as `utimensat` passes it: nil for `UTIME_OMIT`, `.now` for `UTIME_NOW`.
        public init?(seconds: Int64, nanoseconds: Int64) {
            switch nanoseconds {
            case Self.utimeOmit: return nil
            case Self.utimeNow: self = .now
            default: self = .set(Timestamp(seconds: seconds, nanoseconds: nanoseconds))
            }
        }
    }

    /// Permission bits; any type bits are ignored.
    public var mode: UInt32?
    public var uid: UInt32?
    public var gid: UInt32?
    public var size: UInt64?
    public var accessTime: TimeChange?
    public var modificationTime: TimeChange?
    /// The kernel's FATTR_KILL_SUIDGID: a truncate by a caller without CAP_FSETID, or a chown
    /// (`FileSystem.dropsPrivileges`).
    public var dropsSetIDs = false

    public init(mode: UInt32? = nil, uid: UInt32? = nil, gid: UInt32? = nil, size: UInt64? = nil,
                accessTime: TimeChange? = nil, modificationTime: TimeChange? = nil) {
        self.mode = mode; self.uid = uid; self.gid = gid; self.size = size
        self.accessTime = accessTime; self.modificationTime = modificationTime
    }

    var changesMetadata: Bool {
        mode != nil || uid != nil || gid != nil || accessTime != nil || modificationTime != nil
    }
}
