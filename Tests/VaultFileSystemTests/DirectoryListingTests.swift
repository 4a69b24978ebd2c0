import Glibc
import Testing
import VaultFileSystem

@Suite struct DirectoryListingTests {
    @Test func listingHasDotsTypesAndResumableOffsets() throws {
        let h = try FileSystemHarness()
        let folder = try h.mkdir("folder")
        try h.createFile("file")
        _ = try h.fs.makeSymbolicLink(h.root, "link".bytes, target: "file".bytes, caller: h.caller)
        _ = try h.fs.makeNode(h.root, "pipe".bytes, mode: 0o010600, rdev: 0, caller: h.caller)
        let handle = try h.fs.openDirectory(h.root)
        defer { h.fs.releaseDirectory(handle) }
        let all = try h.fs.readDirectory(handle, offset: 0, limit: 100)
        #expect(all.map { String(decoding: $0.name, as: UTF8.self) } == [".", "..", "file", "folder", "link", "pipe"])
        #expect(all.map(\.type) == [.directory, .directory, .regular, .directory, .symbolicLink, .fifo])
        #expect(all[3].inode == folder)
        #expect(all[0].inode == h.root && all[1].inode == h.root)
        // Reading in pieces gives the same entries.
        var pieces: [DirectoryEntry] = []
        var offset: Int64 = 0
        while true {
            let part = try h.fs.readDirectory(handle, offset: offset, limit: 2)
            if part.isEmpty { break }
            pieces += part
            offset = part.last!.nextOffset
        }
        #expect(pieces == all)
    }

    @Test func listingPlusGivesAttributesAndCountsLookups() throws {
        let h = try FileSystemHarness()
        let folder = try h.mkdir("folder")
        try h.createFile("file")
        let file = try h.fs.lookup(h.root, "file".bytes).inode
        let before = h.fs.lookupCount(file), rootBefore = h.fs.lookupCount(h.root)
        let handle = try h.fs.openDirectory(h.root)
        defer { h.fs.releaseDirectory(handle) }
        let listed = try h.fs.readDirectoryPlus(handle, offset: 0, limit: 100)
        #expect(listed.map(\.entry) == (try h.fs.readDirectory(handle, offset: 0, limit: 100)))
        #expect(listed[0].attributes == nil && listed[1].attributes == nil, "no lookup of . and ..")
        #expect(listed[2].attributes == (try h.fs.attributes(file)))
        #expect(listed[3].attributes?.inode == folder)
        #expect(h.fs.lookupCount(file) == before + 1 && h.fs.lookupCount(h.root) == rootBefore)
        // The kernel forgets what it got; an item deleted meanwhile then goes.
        try h.fs.unlink(h.root, "file".bytes)
        h.fs.forget(file, count: before + 1)
        #expect(throws: FSError.notFound) { try h.fs.attributes(file) }
    }

    @Test func dotDotOfASubfolderIsItsParent() throws {
        let h = try FileSystemHarness()
        let a = try h.mkdir("a")
        let b = try h.mkdir("b", in: a)
        let handle = try h.fs.openDirectory(b)
        defer { h.fs.releaseDirectory(handle) }
        let entries = try h.fs.readDirectory(handle, offset: 0, limit: 10)
        #expect(entries.map(\.inode) == [b, a])
        #expect(throws: FSError.notADirectory) { try h.fs.openDirectory(try h.createFile("f")) }
    }

    @Test func entriesRemovedDuringAListingAreLeftOutAndRewindListsAgain() throws {
        let h = try FileSystemHarness()
        for name in ["a", "b", "c", "d"] { try h.createFile(name) }
        let handle = try h.fs.openDirectory(h.root)
        defer { h.fs.releaseDirectory(handle) }
        let first = try h.fs.readDirectory(handle, offset: 0, limit: 3)
        #expect(first.map { String(decoding: $0.name, as: UTF8.self) } == [".", "..", "a"])
        // rm -rf reads and unlinks as it goes.
        try h.fs.unlink(h.root, "a".bytes)
        try h.fs.unlink(h.root, "b".bytes)
        try h.createFile("e")
        let rest = try h.fs.readDirectory(handle, offset: first.last!.nextOffset, limit: 10)
        #expect(rest.map { String(decoding: $0.name, as: UTF8.self) }.allSatisfy { ["b", "c", "d"].contains($0) })
        let again = try h.fs.readDirectory(handle, offset: 0, limit: 10)
        #expect(again.map { String(decoding: $0.name, as: UTF8.self) } == [".", "..", "c", "d", "e"])
    }

    @Test func largeFolder() throws {
        let h = try FileSystemHarness()
        let folder = try h.mkdir("many")
        for i in 0..<2000 { try h.createFile(paddedName(i), in: folder) }
        let names = try h.names(folder)
        #expect(names.count == 2002)
        #expect(names[2] == "f00000" && names.last == "f01999")
    }
}

private func paddedName(_ value: Int) -> String {
    let digits = String(value)
    return "f" + String(repeating: "0", count: max(0, 5 - digits.count)) + digits
}
