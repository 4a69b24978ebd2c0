import Glibc
import Testing
import VaultCore
import VaultFileSystem

/// Names, folders, links and attributes: POSIX semantics of the model, no mount.
@Suite struct NamespaceTests {
    @Test func rootIsFUSERootWithFolderAttributes() throws {
        let h = try FileSystemHarness()
        let root = try h.fs.attributes(FileSystem.rootInode)
        #expect(FileSystem.rootInode == 1)
        #expect(root.inode == 1)
        #expect(root.type == .directory)
        #expect(root.linkCount == 2)
        #expect(root.mode == 0o040755)
    }

    @Test func createAppliesUmaskAndCallerOwnership() throws {
        let h = try FileSystemHarness()
        let caller = Caller(uid: 1234, gid: 567, umask: 0o027)
        let (attributes, handle) = try h.fs.create(h.root, "f".bytes, mode: 0o666, flags: O_CREAT | O_WRONLY, caller: caller)
        h.fs.release(handle)
        #expect(attributes.mode == 0o100640)
        #expect(attributes.uid == 1234 && attributes.gid == 567)
        #expect(attributes.linkCount == 1)
        #expect(attributes.size == 0)
        let folder = try h.fs.makeDirectory(h.root, "d".bytes, mode: 0o777, caller: caller)
        #expect(folder.mode == 0o040750)
    }

    @Test func createWithoutExclusiveOpensExistingAndExclusiveFails() throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("f", contents: pattern(100))
        let (attributes, handle) = try h.fs.create(h.root, "f".bytes, mode: 0o600, flags: O_CREAT | O_RDWR, caller: h.caller)
        #expect(attributes.inode == id)
        #expect(attributes.size == 100)
        h.fs.release(handle)
        #expect(throws: FSError.exists) {
            try h.fs.create(h.root, "f".bytes, mode: 0o600, flags: O_CREAT | O_EXCL | O_RDWR, caller: h.caller)
        }
        #expect(h.fs.openHandleCount == 0)
    }

    @Test func setGroupIDFolderPassesItsGroupOn() throws {
        let h = try FileSystemHarness()
        let shared = try h.mkdir("shared")
        _ = try h.fs.setAttributes(shared, AttributeChanges(mode: 0o2775, gid: 99))
        let file = try h.createFile("f", in: shared)
        #expect(try h.fs.attributes(file).gid == 99)
        let sub = try h.fs.makeDirectory(shared, "sub".bytes, mode: 0o755, caller: h.caller)
        #expect(sub.gid == 99)
        #expect(sub.permissions & UInt32(S_ISGID) != 0)
    }

    @Test func lookupCountsUntilForget() throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("f")
        #expect(h.fs.lookupCount(id) == 1)
        _ = try h.lookup("f")
        _ = try h.lookup("f")
        #expect(h.fs.lookupCount(id) == 3)
        h.fs.forget(id, count: 2)
        #expect(h.fs.lookupCount(id) == 1)
        h.fs.forget(id, count: 1)
        #expect(h.fs.lookupCount(id) == 0)
        #expect(throws: FSError.notFound) { try h.lookup("missing") }
        #expect(throws: FSError.nameTooLong) { try h.fs.lookup(h.root, [UInt8](repeating: 0x61, count: 256)) }
        #expect(throws: FSError.notADirectory) { try h.fs.lookup(id, "x".bytes) }
    }

    @Test func knownInodeOutlivesItsLastNameUntilForget() throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("f", contents: pattern(10))
        try h.fs.unlink(h.root, "f".bytes)
        #expect(try h.fs.attributes(id).linkCount == 0)
        #expect(throws: FSError.notFound) { try h.lookup("f") }
        h.fs.forget(id, count: 1)
        #expect(throws: FSError.notFound) { try h.fs.attributes(id) }
    }

    @Test func mkdirRmdirAndTheirErrors() throws {
        let h = try FileSystemHarness()
        let d = try h.mkdir("d")
        #expect(try h.fs.attributes(h.root).linkCount == 3)
        try h.createFile("f", in: d)
        #expect(throws: FSError.exists) { try h.mkdir("d") }
        #expect(throws: FSError.notEmpty) { try h.fs.removeDirectory(h.root, "d".bytes) }
        #expect(throws: FSError.isADirectory) { try h.fs.unlink(h.root, "d".bytes) }
        try h.createFile("plain")
        #expect(throws: FSError.notADirectory) { try h.fs.removeDirectory(h.root, "plain".bytes) }
        try h.fs.unlink(d, "f".bytes)
        try h.fs.removeDirectory(h.root, "d".bytes)
        #expect(throws: FSError.notFound) { try h.lookup("d") }
        #expect(try h.fs.attributes(h.root).linkCount == 2)
    }

    @Test func renameOverFileReplacesAtomicallyAndOpenTargetStaysReadable() throws {
        let h = try FileSystemHarness()
        let old = try h.createFile("target", contents: pattern(1000, seed: 1))
        let new = try h.createFile("source", contents: pattern(2000, seed: 2))
        let handle = try h.fs.open(old, flags: O_RDONLY, caller: .root)
        h.fs.forget(old, count: 1)
        try h.fs.rename(h.root, "source".bytes, to: h.root, "target".bytes)
        #expect(try h.lookup("target").inode == new)
        #expect(throws: FSError.notFound) { try h.lookup("source") }
        #expect(try h.fs.read(handle, offset: 0, count: 5000) == pattern(1000, seed: 1))
        h.fs.release(handle)
        #expect(throws: FSError.notFound) { try h.fs.attributes(old) }
        #expect(try h.names(h.root) == [".", "..", "target"])
    }

    @Test func renameFolderCasesFollowPOSIX() throws {
        let h = try FileSystemHarness()
        let a = try h.mkdir("a")
        _ = try h.mkdir("empty")
        let full = try h.mkdir("full")
        try h.createFile("x", in: full)
        try h.createFile("file")
        try h.createFile("inner", in: a)
        #expect(throws: FSError.notEmpty) { try h.fs.rename(h.root, "a".bytes, to: h.root, "full".bytes) }
        #expect(throws: FSError.notADirectory) { try h.fs.rename(h.root, "a".bytes, to: h.root, "file".bytes) }
        #expect(throws: FSError.isADirectory) { try h.fs.rename(h.root, "file".bytes, to: h.root, "empty".bytes) }
        #expect(throws: FSError.invalidArgument) { try h.fs.rename(h.root, "full".bytes, to: full, "loop".bytes) }
        try h.fs.rename(h.root, "a".bytes, to: h.root, "empty".bytes)
        #expect(try h.lookup("empty").inode == a)
        #expect(try h.names(a) == [".", "..", "inner"])
        try h.fs.rename(h.root, "empty".bytes, to: full, "moved".bytes)
        #expect(try h.names(full) == [".", "..", "moved", "x"])
        #expect(try h.fs.attributes(full).linkCount == 3)
    }

    @Test func renameNoReplaceAndExchange() throws {
        let h = try FileSystemHarness()
        try h.createFile("a")
        try h.createFile("b")
        #expect(throws: FSError.exists) { try h.fs.rename(h.root, "a".bytes, to: h.root, "b".bytes, flags: .noReplace) }
        #expect(throws: FSError.invalidArgument) { try h.fs.rename(h.root, "a".bytes, to: h.root, "b".bytes, flags: .exchange) }
        try h.fs.rename(h.root, "a".bytes, to: h.root, "c".bytes, flags: .noReplace)
        #expect(try h.names(h.root) == [".", "..", "b", "c"])
    }

    @Test func renameBetweenTwoLinksOfOneFileDoesNothing() throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("a")
        _ = try h.fs.link(id, into: h.root, named: "b".bytes)
        try h.fs.rename(h.root, "a".bytes, to: h.root, "b".bytes)
        #expect(try h.names(h.root) == [".", "..", "a", "b"])
        #expect(try h.fs.attributes(id).linkCount == 2)
    }

    @Test func hardLinksShareContentAndCountLinks() throws {
        let h = try FileSystemHarness()
        let folder = try h.mkdir("d")
        let id = try h.createFile("a", contents: pattern(300))
        #expect(try h.fs.link(id, into: h.root, named: "b".bytes).linkCount == 2)
        #expect(try h.fs.link(id, into: folder, named: "c".bytes).linkCount == 3)
        #expect(try h.lookup("c", in: folder).inode == id)
        try h.fs.unlink(h.root, "a".bytes)
        #expect(try h.fs.attributes(id).linkCount == 2)
        #expect(try h.readAll(try h.lookup("b").inode) == pattern(300))
        #expect(throws: FSError.notPermitted) { try h.fs.link(folder, into: h.root, named: "x".bytes) }
        #expect(throws: FSError.exists) { try h.fs.link(id, into: h.root, named: "b".bytes) }
    }

    @Test func symbolicLinks() throws {
        let h = try FileSystemHarness()
        let link = try h.fs.makeSymbolicLink(h.root, "l".bytes, target: "../some/where".bytes, caller: h.caller)
        #expect(link.type == .symbolicLink)
        #expect(link.mode == 0o120777)
        #expect(link.size == 13)
        #expect(try h.fs.readSymbolicLink(link.inode) == "../some/where".bytes)
        let file = try h.createFile("f")
        #expect(throws: FSError.invalidArgument) { try h.fs.readSymbolicLink(file) }
        #expect(throws: FSError.nameTooLong) {
            try h.fs.makeSymbolicLink(h.root, "long".bytes, target: [UInt8](repeating: 0x61, count: 4096), caller: h.caller)
        }
        #expect(throws: FSError.isADirectory) { try h.fs.open(h.root, flags: O_RDONLY, caller: .root) }
        #expect(throws: FSError.invalidArgument) { try h.fs.open(link.inode, flags: O_RDONLY, caller: .root) }
    }

    @Test func specialFilesAreEntries() throws {
        let h = try FileSystemHarness()
        let fifo = try h.fs.makeNode(h.root, "fifo".bytes, mode: 0o010644, rdev: 0, caller: h.caller)
        let device = try h.fs.makeNode(h.root, "null".bytes, mode: 0o020666, rdev: 0x0103, caller: h.caller)
        let block = try h.fs.makeNode(h.root, "disk".bytes, mode: 0o060660, rdev: 0x0800, caller: h.caller)
        let socket = try h.fs.makeNode(h.root, "sock".bytes, mode: 0o140755, rdev: 0, caller: h.caller)
        let regular = try h.fs.makeNode(h.root, "reg".bytes, mode: 0o100666, rdev: 0, caller: h.caller)
        #expect(fifo.type == .fifo && fifo.mode == 0o010644)
        #expect(device.type == .characterDevice && device.rdev == 0x0103 && device.mode == 0o020644)
        #expect(block.type == .blockDevice && block.rdev == 0x0800)
        #expect(socket.type == .socket)
        #expect(regular.type == .regular && regular.mode == 0o100644)
        #expect(throws: FSError.invalidArgument) { try h.fs.makeNode(h.root, "d".bytes, mode: 0o040755, rdev: 0, caller: h.caller) }

        try h.fs.close()
        let again = try h.reopened()
        #expect(try again.lookup("null").rdev == 0x0103)
        #expect(try again.lookup("sock").type == .socket)
        #expect(try again.names(again.root) == [".", "..", "disk", "fifo", "null", "reg", "sock"])
    }

    @Test func chmodChownAreStoredAndMoveChangeTime() throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("f")
        let before = try h.fs.attributes(id)
        h.clock.advance(seconds: 10)
        let after = try h.fs.setAttributes(id, AttributeChanges(mode: 0o104711, uid: 42, gid: 43))
        #expect(after.mode == 0o104711)
        #expect(after.uid == 42 && after.gid == 43)
        #expect(after.changeTime.seconds == before.changeTime.seconds + 10)
        #expect(after.modificationTime == before.modificationTime)
        try h.fs.close()
        let again = try h.reopened()
        let stored = try again.lookup("f")
        #expect(stored.mode == 0o104711 && stored.uid == 42 && stored.gid == 43)
    }

    @Test func utimensWithNowAndOmit() throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("f")
        let created = try h.fs.attributes(id)
        let past = Timestamp(seconds: 946_684_800, nanoseconds: 123_456_789)
        var changed = try h.fs.setAttributes(id, AttributeChanges(accessTime: .set(past), modificationTime: .set(past)))
        #expect(changed.accessTime == past && changed.modificationTime == past)

        // atime UTIME_NOW, mtime UTIME_OMIT.
        h.clock.advance(seconds: 100)
        let now = Timestamp(nanosecondsSinceEpoch: h.clock.now())
        let accessNow = AttributeChanges.TimeChange(seconds: 0, nanoseconds: AttributeChanges.TimeChange.utimeNow)
        let omit = AttributeChanges.TimeChange(seconds: 5, nanoseconds: AttributeChanges.TimeChange.utimeOmit)
        #expect(accessNow == .now)
        #expect(omit == nil)
        changed = try h.fs.setAttributes(id, AttributeChanges(accessTime: accessNow, modificationTime: omit))
        #expect(changed.accessTime == now)
        #expect(changed.modificationTime == past)
        #expect(changed.changeTime == now)
        #expect(changed.changeTime != created.changeTime)

        // Before 1970, and far in the future (clamped, not an error).
        let old = Timestamp(seconds: -86_400 * 365, nanoseconds: 5)
        changed = try h.fs.setAttributes(id, AttributeChanges(modificationTime: .set(old)))
        #expect(changed.modificationTime == old)
        changed = try h.fs.setAttributes(id, AttributeChanges(modificationTime: .set(Timestamp(seconds: 1 << 40, nanoseconds: 0))))
        #expect(changed.modificationTime == Timestamp(nanosecondsSinceEpoch: .max))

        try h.fs.close()
        let again = try h.reopened()
        #expect(try again.lookup("f").accessTime == now)
    }

    @Test func namesAreCheckedBeforeTheVault() throws {
        let h = try FileSystemHarness()
        let long = [UInt8](repeating: 0x61, count: 256)
        #expect(throws: FSError.nameTooLong) { try h.fs.makeDirectory(h.root, long, mode: 0o755, caller: h.caller) }
        #expect(throws: FSError.nameTooLong) { try h.fs.create(h.root, long, mode: 0o644, flags: O_CREAT, caller: h.caller) }
        #expect(throws: FSError.invalidArgument) { try h.fs.makeDirectory(h.root, "a/b".bytes, mode: 0o755, caller: h.caller) }
        let ok = [UInt8](repeating: 0x61, count: 255)
        _ = try h.fs.makeDirectory(h.root, ok, mode: 0o755, caller: h.caller)
    }

    @Test func errorsCarryTheirErrno() {
        #expect(FSError.notFound.errno == ENOENT)
        #expect(FSError.notEmpty.errno == ENOTEMPTY)
        #expect(FSError.noAttribute.errno == ENODATA)
        #expect(FSError.tooManyLinks.errno == EMLINK)
        #expect(FSError.vault(.damagedData("x")).errno == EIO)
        #expect(FSError.vault(.store(.noSpace)).errno == ENOSPC)
    }
}
