import Glibc
import Testing
import VaultFileSystem

@Suite struct ExtendedAttributeTests {
    @Test func setGetListRemove() throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("f")
        try h.fs.setExtendedAttribute(id, "user.tag".bytes, "red".bytes)
        try h.fs.setExtendedAttribute(id, "user.empty".bytes, [])
        #expect(try h.fs.extendedAttribute(id, "user.tag".bytes) == "red".bytes)
        #expect(try h.fs.extendedAttribute(id, "user.empty".bytes) == [])
        #expect(Set(try h.fs.extendedAttributeNames(id)) == ["user.tag".bytes, "user.empty".bytes])
        try h.fs.setExtendedAttribute(id, "user.tag".bytes, "blue".bytes)
        #expect(try h.fs.extendedAttribute(id, "user.tag".bytes) == "blue".bytes)
        try h.fs.removeExtendedAttribute(id, "user.tag".bytes)
        #expect(throws: FSError.noAttribute) { try h.fs.extendedAttribute(id, "user.tag".bytes) }
        #expect(try h.fs.extendedAttributeNames(id) == ["user.empty".bytes])
        // Folders carry attributes too.
        try h.fs.setExtendedAttribute(h.root, "user.root".bytes, [1])
        try h.fs.close()
        let again = try h.reopened()
        #expect(try again.fs.extendedAttribute(try again.lookup("f").inode, "user.empty".bytes) == [])
        #expect(try again.fs.extendedAttribute(again.root, "user.root".bytes) == [1])
    }

    @Test func createReplaceAndMissing() throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("f")
        #expect(throws: FSError.noAttribute) { try h.fs.setExtendedAttribute(id, "user.a".bytes, [1], replace: true) }
        try h.fs.setExtendedAttribute(id, "user.a".bytes, [1], create: true)
        #expect(throws: FSError.exists) { try h.fs.setExtendedAttribute(id, "user.a".bytes, [2], create: true) }
        try h.fs.setExtendedAttribute(id, "user.a".bytes, [3], replace: true)
        #expect(try h.fs.extendedAttribute(id, "user.a".bytes) == [3])
        #expect(throws: FSError.invalidArgument) { try h.fs.setExtendedAttribute(id, "user.a".bytes, [4], create: true, replace: true) }
        #expect(throws: FSError.noAttribute) { try h.fs.removeExtendedAttribute(id, "user.missing".bytes) }
        #expect(throws: FSError.noAttribute) { try h.fs.extendedAttribute(id, "user.missing".bytes) }
        #expect(FSError.noAttribute.errno == ENODATA)
    }

    @Test func limits() throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("f")
        #expect(throws: FSError.attributeNameOutOfRange) { try h.fs.setExtendedAttribute(id, [], [1]) }
        #expect(throws: FSError.attributeNameOutOfRange) {
            try h.fs.setExtendedAttribute(id, [UInt8](repeating: 0x61, count: 256), [1])
        }
        #expect(throws: FSError.attributeTooLarge) {
            try h.fs.setExtendedAttribute(id, "user.big".bytes, [UInt8](repeating: 1, count: 65537))
        }
        // The vault keeps 32 KiB of attributes per item: more is ENOSPC, as on ext4.
        try h.fs.setExtendedAttribute(id, "user.a".bytes, [UInt8](repeating: 1, count: 20_000))
        #expect(throws: FSError.noSpace) {
            try h.fs.setExtendedAttribute(id, "user.b".bytes, [UInt8](repeating: 1, count: 20_000))
        }
        #expect(throws: FSError.noAttribute) { try h.fs.extendedAttribute(id, "user.b".bytes) }
    }

    @Test(arguments: ["system.posix_acl_access", "system.posix_acl_default", "security.selinux"])
    func accessControlListsAndLabelsAreNotSupported(name: String) throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("f")
        #expect(throws: FSError.notSupported) { try h.fs.setExtendedAttribute(id, name.bytes, [2, 0, 0, 0]) }
        #expect(throws: FSError.notSupported) { try h.fs.extendedAttribute(id, name.bytes) }
        #expect(throws: FSError.notSupported) { try h.fs.removeExtendedAttribute(id, name.bytes) }
        #expect(FSError.notSupported.errno == EOPNOTSUPP)
        // Other attributes of the namespace are kept as before.
        try h.fs.setExtendedAttribute(id, "security.other".bytes, [1])
        #expect(try h.fs.extendedAttributeNames(id) == ["security.other".bytes])
    }

    /// ext4 keeps `user.`, `trusted.` and `security.` (and the ACLs of `system.`): any other
    /// namespace is EOPNOTSUPP, a known prefix with nothing after it EINVAL. One stored by a
    /// build that took any name is not listed and cannot be read, and removing it is refused.
    @Test(arguments: ["foo.bar", "bogus", "system.x", "userx.a", "user", "user.", "trusted.", "security."])
    func namespacesExt4DoesNotKeepAreRefused(name: String) throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("f")
        let refusal: FSError = name.hasSuffix(".") ? .invalidArgument : .notSupported
        #expect(throws: refusal) { try h.fs.setExtendedAttribute(id, name.bytes, [1]) }
        #expect(throws: refusal) { try h.fs.extendedAttribute(id, name.bytes) }
        #expect(throws: refusal) { try h.fs.removeExtendedAttribute(id, name.bytes) }
        try h.vault.setExtendedAttribute(id, name.bytes, [1])
        try h.fs.setExtendedAttribute(id, "user.kept".bytes, [2])
        #expect(try h.fs.extendedAttributeNames(id) == ["user.kept".bytes])
        #expect(throws: refusal) { try h.fs.extendedAttribute(id, name.bytes) }
        #expect(throws: refusal) { try h.fs.removeExtendedAttribute(id, name.bytes) }
    }
}
