import VaultCore

/// Who asks: the calling process's ids and umask, as FUSE reports them for each request. New
/// items belong to the caller (or to the folder's group when the folder is set-group-ID).
public struct Caller: Equatable, Sendable {
    public var uid: UInt32
    public var gid: UInt32
    public var umask: UInt32

    public init(uid: UInt32, gid: UInt32, umask: UInt32 = 0o022) {
        self.uid = uid; self.gid = gid; self.umask = umask
    }

    public static let root = Caller(uid: 0, gid: 0)
}

extension Caller {
    /// What this caller's change of a file's content takes from it. Root stands for a caller
    /// with CAP_FSETID: FUSE does not say, and a root caller without it is rare.
    public var changingContent: PrivilegeDrop { PrivilegeDrop(unprivilegedGroup: uid == 0 ? nil : gid) }
}
