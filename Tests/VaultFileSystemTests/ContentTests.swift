import Glibc
import Testing
import VaultCore
import VaultFileSystem

/// Reading and writing through handles: offsets, holes, append, truncate, unlink while open.
@Suite struct ContentTests {
    static let chunk = 262_144

    @Test func writesAtOffsetsAndPastTheEndLeaveZeroHoles() throws {
        let h = try FileSystemHarness()
        let (attributes, handle) = try h.fs.create(h.root, "f".bytes, mode: 0o644, flags: O_CREAT | O_RDWR, caller: h.caller)
        defer { h.fs.release(handle) }
        #expect(try h.fs.write(handle, offset: 0, bytes: pattern(100)) == 100)
        let far = UInt64(3 * Self.chunk + 17)
        #expect(try h.fs.write(handle, offset: far, bytes: pattern(50, seed: 9)) == 50)
        #expect(try h.fs.attributes(attributes.inode).size == far + 50)
        let all = try h.fs.read(handle, offset: 0, count: Int(far) + 1000)
        #expect(all.count == Int(far) + 50)
        #expect(Array(all[0..<100]) == pattern(100))
        #expect(all[100..<Int(far)].allSatisfy { $0 == 0 })
        #expect(Array(all[Int(far)...]) == pattern(50, seed: 9))
        #expect(try h.fs.read(handle, offset: far + 50, count: 10).isEmpty)
        #expect(try h.fs.read(handle, offset: far + 5000, count: 10).isEmpty)
    }

    @Test func truncateDownThenUpReadsZeros() throws {
        let h = try FileSystemHarness()
        let data = pattern(Self.chunk + 5000)
        let id = try h.createFile("f", contents: data)
        // Down into the first chunk, then up past the old end: the cut bytes must read as zeros.
        #expect(try h.fs.setAttributes(id, AttributeChanges(size: 1000)).size == 1000)
        #expect(try h.fs.setAttributes(id, AttributeChanges(size: UInt64(2 * Self.chunk))).size == UInt64(2 * Self.chunk))
        let back = try h.readAll(id)
        #expect(back.count == 2 * Self.chunk)
        #expect(Array(back[0..<1000]) == Array(data[0..<1000]))
        #expect(back[1000...].allSatisfy { $0 == 0 })
        try h.fs.close()
        let again = try h.reopened()
        let stored = try again.readAll(try again.lookup("f").inode)
        #expect(stored == back)
    }

    @Test func hugeSparseFileByTruncate() throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("sparse")
        let tebibyte: UInt64 = 1 << 40
        let attributes = try h.fs.setAttributes(id, AttributeChanges(size: tebibyte))
        #expect(attributes.size == tebibyte)
        // A hole: no block is stored, so none is counted (du).
        #expect(attributes.blocks == 0)
        let handle = try h.fs.open(id, flags: O_RDWR, caller: .root)
        defer { h.fs.release(handle) }
        #expect(try h.fs.read(handle, offset: tebibyte - 4096, count: 8192) == [UInt8](repeating: 0, count: 4096))
        _ = try h.fs.write(handle, offset: tebibyte - 3, bytes: [1, 2, 3])
        #expect(try h.fs.read(handle, offset: tebibyte - 4, count: 10) == [0, 1, 2, 3])
        // The last chunk holds data now: it counts whole, 256 KiB.
        #expect(try h.fs.attributes(id).blocks == 512)
        #expect(try h.fs.seek(handle, from: 0, whence: FileSystem.seekData) == tebibyte - (1 << 18))
        #expect(throws: FSError.noSuchOffset) { try h.fs.seek(handle, from: Int64(tebibyte), whence: FileSystem.seekHole) }
        #expect(throws: FSError.isADirectory) { try h.fs.setAttributes(h.root, AttributeChanges(size: 0)) }
    }

    @Test func appendWritesAtTheCurrentEndWhateverTheOffset() throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("log", contents: "start\n".bytes)
        let first = try h.fs.open(id, flags: O_WRONLY | O_APPEND, caller: .root)
        let second = try h.fs.open(id, flags: O_WRONLY | O_APPEND, caller: .root)
        let plain = try h.fs.open(id, flags: O_RDWR, caller: .root)
        _ = try h.fs.write(first, offset: 0, bytes: "one\n".bytes)
        _ = try h.fs.write(second, offset: 0, bytes: "two\n".bytes)
        _ = try h.fs.write(plain, offset: 0, bytes: "S".bytes)
        _ = try h.fs.write(first, offset: 3, bytes: "three\n".bytes)
        for handle in [first, second, plain] { h.fs.release(handle) }
        #expect(String(decoding: try h.readAll(id), as: UTF8.self) == "Start\none\ntwo\nthree\n")
    }

    @Test func openWithTruncateEmptiesOnlyWhenWriting() throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("f", contents: pattern(5000))
        h.fs.release(try h.fs.open(id, flags: O_RDONLY | O_TRUNC, caller: .root))
        #expect(try h.fs.attributes(id).size == 5000)
        h.clock.advance(seconds: 3)
        h.fs.release(try h.fs.open(id, flags: O_WRONLY | O_TRUNC, caller: .root))
        let attributes = try h.fs.attributes(id)
        #expect(attributes.size == 0)
        #expect(attributes.modificationTime == Timestamp(nanosecondsSinceEpoch: h.clock.now()))
    }

    @Test func unlinkedOpenFileStaysReadableAndWritableUntilReleased() throws {
        let h = try FileSystemHarness()
        let data = pattern(Self.chunk * 2 + 10)
        let id = try h.createFile("f", contents: data)
        try h.fs.close()
        let again = try h.reopened()
        let inode = try again.lookup("f").inode
        #expect(inode == id)
        let handle = try again.fs.open(inode, flags: O_RDWR, caller: .root)
        try again.fs.unlink(again.root, "f".bytes)
        again.fs.forget(inode, count: 1)
        #expect(throws: FSError.notFound) { try again.lookup("f") }
        #expect(try again.fs.read(handle, offset: 0, count: data.count) == data)
        _ = try again.fs.write(handle, offset: 5, bytes: [9, 9, 9])
        #expect(try again.fs.read(handle, offset: 4, count: 5) == [data[4], 9, 9, 9, data[8]])
        #expect(try again.fs.attributes(inode).linkCount == 0)
        // A commit while it is open does not bring the name back, nor lose the content.
        try again.fs.synchronize()
        #expect(try again.fs.read(handle, offset: 0, count: 3) == Array(data[0..<3]))
        again.fs.release(handle)
        #expect(throws: FSError.notFound) { try again.fs.attributes(inode) }
        try again.fs.close()
        let third = try again.reopened()
        #expect(try third.names(third.root) == [".", ".."])
    }

    @Test func handlesAreChecked() throws {
        let h = try FileSystemHarness()
        #expect(throws: FSError.badHandle) { try h.fs.read(77, offset: 0, count: 1) }
        #expect(throws: FSError.badHandle) { try h.fs.write(77, offset: 0, bytes: [1]) }
        let folder = try h.fs.openDirectory(h.root)
        #expect(throws: FSError.badHandle) { try h.fs.read(folder, offset: 0, count: 1) }
        h.fs.releaseDirectory(folder)
        #expect(h.fs.openHandleCount == 0)
    }

    @Test func closedFileSystemRefusesWithEIOAndKeepsData() throws {
        let h = try FileSystemHarness()
        let id = try h.createFile("f", contents: pattern(777))
        try h.fs.close()
        try h.fs.close()
        #expect(throws: FSError.vault(.locked)) { try h.fs.attributes(id) }
        #expect((try? h.fs.attributes(id)) == nil)
        do { _ = try h.fs.lookup(h.root, "f".bytes) } catch { #expect(error.errno == EIO) }
        let again = try h.reopened()
        #expect(try again.readAll(try again.lookup("f").inode) == pattern(777))
    }
}
