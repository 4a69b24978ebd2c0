/// What a change of a file takes from it when the kernel leaves that to the file system (an
/// open with O_TRUNC always; a write, truncate or chown under FUSE_HANDLE_KILLPRIV_V2), decided
/// as the kernel decides it for ext4 (fs/attr.c): the `security.capability` attribute always;
/// the set-user-ID bit from a caller without CAP_FSETID, and for any change of owner; the
/// set-group-ID bit likewise where the group may execute the file, and from a caller without
/// CAP_FSETID who is not of the file's group.
public struct PrivilegeDrop: Equatable, Sendable {
    /// A chown: set-ID bits go even for a privileged caller.
    public var isOwnerChange: Bool
    /// The group of a caller without CAP_FSETID; nil for a caller with it.
    public var unprivilegedGroup: UInt32?

    public init(isOwnerChange: Bool = false, unprivilegedGroup: UInt32?) {
        self.isOwnerChange = isOwnerChange
        self.unprivilegedGroup = unprivilegedGroup
    }

    static let capabilityAttribute = Array("security.capability".utf8)
    static let setUserID: UInt32 = 0o4000
    static let setGroupID: UInt32 = 0o2000
    static let groupExecute: UInt32 = 0o010

    /// The permission bits after the change, or nil if they stay.
    public func mode(after mode: UInt32, gid: UInt32) -> UInt32? {
        let drops = isOwnerChange || unprivilegedGroup != nil
        var kept = mode
        if drops { kept &= ~Self.setUserID }
        let outsideGroup = unprivilegedGroup.map { $0 != gid } ?? false
        if (drops && mode & Self.groupExecute != 0) || outsideGroup { kept &= ~Self.setGroupID }
        return kept == mode ? nil : kept
    }
}
