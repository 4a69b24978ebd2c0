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
            try Self.checkKept(name)
            return try vault.extendedAttribute(inode, name)
        }
    }

    /// Without any the vault does not keep (one stored before it stopped keeping them).
    public func extendedAttributeNames(_ inode: UInt64) throws(FSError) -> [[UInt8]] {
        try withState { _ in try vault.extendedAttributeNames(inode).filter { (try? Self.checkKept($0)) != nil } }
    }

    /// setxattr(2): `create` is XATTR_CREATE (EEXIST if present), `replace` XATTR_REPLACE
    /// (ENODATA if absent).
    public func setExtendedAttribute(_ inode: UInt64, _ name: [UInt8], _ value: [UInt8],
                                     create: Bool = false, replace: Bool = false) throws(FSError) {
        guard !(create && replace) else { throw .invalidArgument }
        try Self.checkAttributeName(name)
        try Self.checkKept(name)
        guard value.count <= Self.maximumAttributeValue else { throw .attributeTooLarge }
        try withState(FSError.Context(notFound: .noAttribute, tooLarge: .noSpace)) { _ in
            _ = try vault.attributes(inode)
            try vault.setExtendedAttribute(inode, name, value, create: create, replace: replace)
            commitScheduler.noteChange()
        }
    }

    public func removeExtendedAttribute(_ inode: UInt64, _ name: [UInt8]) throws(FSError) {
        try withState(FSError.Context(notFound: .noAttribute)) { _ in
            try Self.checkAttributeName(name)
            _ = try vault.attributes(inode)
            try Self.checkKept(name)
            try vault.setExtendedAttribute(inode, name, nil)
            commitScheduler.noteChange()
        }
    }

    /// The namespaces ext4 keeps, besides the ACLs of `system.`. The kernel hands a FUSE file
    /// system every name, so the vault answers as ext4 does (the kernel's `xattr_resolve_name`):
    /// a name of any other namespace is EOPNOTSUPP, a namespace with nothing after it EINVAL.
    /// Otherwise `setfattr -n foo.bar` would succeed here and fail once the file is copied out.
    static let keptNamespaces = ["user.", "trusted.", "security."].map { Array($0.utf8) }

    /// Throws what ext4 answers for a name the vault does not keep.
    private static func checkKept(_ name: [UInt8]) throws(FSError) {
        guard let namespace = keptNamespaces.first(where: { name.starts(with: $0) }) else { throw .notSupported }
        guard name.count > namespace.count else { throw .invalidArgument }
        guard !unsupportedAttributeNames.contains(name) else { throw .notSupported }
    }

    private static func checkAttributeName(_ name: [UInt8]) throws(FSError) {
        guard !name.isEmpty, name.count <= maximumNameLength, !name.contains(0) else { throw .attributeNameOutOfRange }
    }
}
