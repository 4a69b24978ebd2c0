import Glibc
import VaultCore

/// Extended attributes: getxattr, listxattr, setxattr, removexattr.
extension FileSystem {
    /// The attributes that carry POSIX ACLs. The kernel passes them through to a FUSE file
    /// system that did not ask for ACL support (on the host's user namespace); storing them would
    /// make `cp -a` believe the ACL, hence the mode, was set and skip its chmod. No ACL support:
    /// setting one is EOPNOTSUPP, as on a file system mounted `noacl`, and reading one ENODATA.
    public static let accessControlListNames: Set<[UInt8]> = [Array("system.posix_acl_access".utf8),
                                                              Array("system.posix_acl_default".utf8)]

    public func extendedAttribute(_ inode: UInt64, _ name: [UInt8]) throws(FSError) -> [UInt8] {
        attributeReads.add(1, ordering: .relaxed)
        return try withState(FSError.Context(notFound: .noAttribute)) { _ in
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

    private static func checkAttributeName(_ name: [UInt8]) throws(FSError) {
        guard !name.isEmpty, name.count <= maximumNameLength, !name.contains(0) else { throw .attributeNameOutOfRange }
    }
}
