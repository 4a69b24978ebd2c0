import Glibc
import VaultCore

/// Extended attributes: getxattr, listxattr, setxattr, removexattr.
extension FileSystem {
    /// Attributes the vault does not keep, answered EOPNOTSUPP (read, set or removed) as by a
    /// file system without them. POSIX ACLs: the kernel passes them through to a FUSE file
    /// system that did not ask for ACL support (on the host's user namespace); storing them
    /// would make `cp -a` believe the ACL, hence the mode, was set and skip its chmod. SELinux
    /// labels: SELinux labels a FUSE mount by its policy and answers reads of a label itself, so
    /// the attribute reaches the vault only where SELinux is off and it means nothing. `ls -l`
    /// asks for both for every entry until one answers EOPNOTSUPP, then never again on that
    /// mount: two round trips per entry fewer than ENODATA.
    public static let unsupportedAttributeNames: Set<[UInt8]> = [Array("system.posix_acl_access".utf8),
                                                                 Array("system.posix_acl_default".utf8),
                                                                 Array("security.selinux".utf8)]

    public func extendedAttribute(_ inode: UInt64, _ name: [UInt8]) throws(FSError) -> [UInt8] {
        attributeReads.add(1, ordering: .relaxed)
        return try withState(FSError.Context(notFound: .noAttribute)) { _ in
            try Self.checkAttributeName(name)
            _ = try vault.attributes(inode)
            guard !Self.unsupportedAttributeNames.contains(name) else { throw FSError.notSupported }
            return try vault.extendedAttribute(inode, name)
        }
    }

    /// Without any the vault does not keep (one stored before it stopped keeping them).
    public func extendedAttributeNames(_ inode: UInt64) throws(FSError) -> [[UInt8]] {
        try withState { _ in try vault.extendedAttributeNames(inode).filter { !Self.unsupportedAttributeNames.contains($0) } }
    }

    /// setxattr(2): `create` is XATTR_CREATE (EEXIST if present), `replace` XATTR_REPLACE
    /// (ENODATA if absent).
    public func setExtendedAttribute(_ inode: UInt64, _ name: [UInt8], _ value: [UInt8],
                                     create: Bool = false, replace: Bool = false) throws(FSError) {
        guard !(create && replace) else { throw .invalidArgument }
        guard !Self.unsupportedAttributeNames.contains(name) else { throw .notSupported }
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
            guard !Self.unsupportedAttributeNames.contains(name) else { throw FSError.notSupported }
            try vault.setExtendedAttribute(inode, name, nil)
            commitScheduler.noteChange()
        }
    }

    private static func checkAttributeName(_ name: [UInt8]) throws(FSError) {
        guard !name.isEmpty, name.count <= maximumNameLength, !name.contains(0) else { throw .attributeNameOutOfRange }
    }
}
