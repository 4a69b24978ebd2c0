import DotSafeTestSupport
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing
import VaultCore
import VaultFileSystem
@testable import VaultFUSE

/// A small file opened for reading is pushed whole into the kernel's page cache before the
/// open is answered (`KernelCacheFill.fillAtOpen`), so reading it asks the daemon nothing; and
/// no pushed page is older than the file: a push held up on its way still lands before an open
/// that may write, a truncate or another open of the file is answered. Attributes are kept
/// 60 s, so that no refresh of them hides a stale page.
@Suite(.serialized) struct OpenFillTests {
    static let options = FUSEMount.Options(attributeTimeout: 60, entryTimeout: 60)
    static let limit = FileSystem.openFillLimit
    /// Ends inside a page.
    static let size = 100_001

    @Test func aSmallFileIsReadWithoutARequest() throws {
        let sizes = ["small": Self.size, "limit": Self.limit, "over": Self.limit + 1, "empty": 0]
        try withFiles(sizes) { mount, paths, contents in
            let fs = mount.fileSystem
            func readCount(_ name: String) throws -> Int {
                let before = fs.readCount
                #expect(try Descriptor(paths[name]!, O_RDONLY).read(at: 0, Self.limit + 4096) == contents[name]!, "\(name)")
                return fs.readCount - before
            }
            #expect(try readCount("small") == 0)
            #expect(try readCount("limit") == 0)
            #expect(try readCount("over") > 0, "a file over the limit is read as before")
            #expect(try readCount("empty") == 0)
            #expect(try Descriptor(paths["small"]!, O_RDONLY).size() == Self.size, "the push did not move the file's end")

            // Changed through the mount: the next open pushes the new bytes. (Once the kernel
            // has seen the new mtime, as `ls` or `find` make it: a first look at it drops the
            // file's pages, pushed ones too, FUSE's auto_inval_data.)
            let patch = [UInt8](repeating: 0xA5, count: 5000)
            try Descriptor(paths["small"]!, O_WRONLY).write(patch, at: 97_000)
            contents["small"]!.replaceSubrange(97_000..<Self.size, with: patch)
            try Self.waitForReleases(fs)
            _ = try Self.inode(paths["small"]!)
            #expect(try readCount("small") == 0)

            // Changed behind the kernel, as a sync does: the same.
            let inode = try Self.inode(paths["limit"]!)
            let newer = [UInt8](repeating: 0x5A, count: 4096)
            try fs.vault.write(inode, offset: 8192, bytes: newer)
            mount.invalidate(items: [inode], names: [])
            contents["limit"]!.replaceSubrange(8192..<12_288, with: newer)
            #expect(try readCount("limit") == 0)
        }
    }

    /// A push at open runs only for the file's only handle: with another one open, a read of it
    /// may be under way, whose locked pages the push would wait for on a request's thread.
    @Test func anotherOpenHandleMeansNoPush() throws {
        try withFiles(["f": Self.size]) { mount, paths, contents in
            let fs = mount.fileSystem, path = paths["f"]!
            let first = try Descriptor(path, O_RDONLY)
            var before = fs.readCount
            #expect(try first.read(at: 0, Self.size) == contents["f"]!)
            #expect(fs.readCount == before)

            let inode = try Self.inode(path)
            let newer = [UInt8](repeating: 0x77, count: 10_000)
            try fs.vault.write(inode, offset: 0, bytes: newer)
            mount.invalidate(items: [inode], names: [])
            contents["f"]!.replaceSubrange(0..<10_000, with: newer)
            before = fs.readCount
            let second = try Descriptor(path, O_RDONLY)
            #expect(try second.read(at: 0, Self.size) == contents["f"]!)
            #expect(fs.readCount > before, "not pushed: the first handle is open")
            #expect(try first.read(at: 0, Self.size) == contents["f"]!)
        }
    }

    @Test func anOpenForWritingWaitsForThePushAtOpen() throws {
        try withHeldPushAtOpen { mount, path, bytes, released, opened in
            let newer = [UInt8](repeating: 0xC3, count: 8192)
            let writer = try Descriptor(path, O_RDWR)
            #expect(released(), "the open waited for the push")
            try writer.write(newer, at: 4096)
            // The kernel asks for the attributes after a write, sees the new mtime and drops
            // its pages; a push landing after that would stay (FUSE's auto_inval_data).
            _ = try writer.size()
            let reader = try opened()
            bytes.replaceSubrange(4096..<12_288, with: newer)
            #expect(try reader.read(at: 0, Self.limit) == bytes, "the write's bytes, not the push's older ones")
            #expect(try PageCacheTests.readAll(path) == bytes)
        }
    }

    @Test func aTruncateWaitsForThePushAtOpen() throws {
        try withHeldPushAtOpen { _, path, bytes, released, opened in
            #expect(truncate(path, 5000) == 0)
            #expect(released(), "the truncate's reply waited for the push")
            let reader = try opened()
            #expect(try reader.size() == 5000, "the push did not move the file's end back")
            #expect(try reader.read(at: 0, Self.limit) == Array(bytes[..<5000]))
        }
    }

    /// Answered during the push, it could start a read whose locked pages the push would wait
    /// for on a request's thread: it waits too, even when it keeps the kernel's cache.
    @Test func anotherOpenForReadingWaitsForThePushAtOpen() throws {
        try withHeldPushAtOpen { mount, path, bytes, released, opened in
            let second = try Descriptor(path, O_RDONLY)
            #expect(released(), "the second open waited for the push")
            #expect(try second.read(at: 0, Self.limit) == bytes)
            #expect(try opened().read(at: 0, Self.limit) == bytes)
        }
    }

    /// Opens and reads (pushes), writes from descriptors opened for them, truncates by path and
    /// changes behind the kernel, at random on three small files, with a descriptor kept open
    /// now and then: every read equal to the file as changed.
    @Test func randomOpensWritesAndTruncatesReadBackWhatWasWritten() throws {
        let names = ["a", "b", "c"]
        try withFiles(Dictionary(uniqueKeysWithValues: names.map { ($0, Self.size) })) { mount, paths, contents in
            var random = SeededGenerator(seed: 41)
            var kept: [String: Descriptor] = [:]
            for step in 0..<240 {
                let name = names.randomElement(using: &random)!, path = paths[name]!
                switch Int.random(in: 0..<12, using: &random) {
                case 0..<5:
                    #expect(try Descriptor(path, O_RDONLY).read(at: 0, Self.limit + 4096) == contents[name]!, "step \(step)")
                case 5..<7:
                    let offset = Int.random(in: 0...Self.limit - 1000, using: &random)
                    let patch = (0..<Int.random(in: 1...(Self.limit - offset), using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                    try Descriptor(path, O_WRONLY).write(patch, at: offset)
                    Self.apply(patch, at: offset, to: &contents[name]!)
                case 7:
                    let size = Int.random(in: 0...Self.limit, using: &random)
                    #expect(truncate(path, off_t(size)) == 0)
                    Self.resize(&contents[name]!, to: size)
                case 8:
                    let inode = try Self.inode(path), offset = Int.random(in: 0..<Self.limit / 2, using: &random)
                    let patch = [UInt8](repeating: UInt8(step & 0xff), count: Int.random(in: 1...20_000, using: &random))
                    try mount.fileSystem.vault.write(inode, offset: UInt64(offset), bytes: patch)
                    mount.invalidate(items: [inode], names: [])
                    Self.apply(patch, at: offset, to: &contents[name]!)
                case 9:
                    kept[name] = kept[name] == nil ? try Descriptor(path, O_RDONLY) : nil
                default:
                    if let descriptor = kept[name] {
                        #expect(try descriptor.read(at: 0, Self.limit + 4096) == contents[name]!, "kept, step \(step)")
                    }
                }
            }
            for name in names { #expect(try PageCacheTests.readAll(paths[name]!) == contents[name]!) }
        }
    }

    /// Three readers open and read the file over and over on their own threads (pushing at
    /// their opens) while the test writes and truncates it: nothing waits on anything that waits
    /// on it (the test ends), and after each change an open reads the file as changed.
    @Test func readersOpeningBesideAWriterSeeEveryChange() throws {
        try withFiles(["f": Self.size]) { _, paths, contents in
            let path = paths["f"]!
            var random = SeededGenerator(seed: 53)
            let flags = Flags()
            let readers = DispatchGroup()
            for _ in 0..<3 {
                DispatchQueue.global().async(group: readers) {
                    while !flags.stop.load(ordering: .relaxed) {
                        if (try? Descriptor(path, O_RDONLY).read(at: 0, Self.limit)) == nil { flags.failures.add(1, ordering: .relaxed) }
                    }
                }
            }
            for round in 0..<60 {
                if round % 5 == 4 {
                    let size = Int.random(in: 1...Self.limit, using: &random)
                    #expect(truncate(path, off_t(size)) == 0)
                    Self.resize(&contents["f"]!, to: size)
                } else {
                    let offset = Int.random(in: 0..<Self.limit - 1, using: &random)
                    let patch = [UInt8](repeating: UInt8(round + 1), count: Int.random(in: 1...(Self.limit - offset), using: &random))
                    try Descriptor(path, O_WRONLY).write(patch, at: offset)
                    Self.apply(patch, at: offset, to: &contents["f"]!)
                }
                #expect(try Descriptor(path, O_RDONLY).read(at: 0, Self.limit + 4096) == contents["f"]!, "round \(round)")
            }
            flags.stop.store(true, ordering: .relaxed)
            readers.wait()
            #expect(flags.failures.load(ordering: .relaxed) == 0)
            #expect(try PageCacheTests.readAll(path) == contents["f"]!)
        }
    }

    // MARK: Helpers

    /// Files of the given sizes written, the mount made again (both caches cold), then `body`.
    private func withFiles(_ sizes: [String: Int],
                           _ body: (FUSEMount, [String: String], inout [String: [UInt8]]) throws -> Void) throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        var paths: [String: String] = [:], contents: [String: [UInt8]] = [:]
        for (name, size) in sizes {
            paths[name] = vault + "/" + name
            let salt = Int(name.utf8.first!)
            contents[name] = (0..<size).map { (i: Int) -> UInt8 in UInt8(truncatingIfNeeded: i &* 131 &+ i >> 9 &+ salt) }
        }
        try harness.withMount(at: vault, options: Self.options) { _ in
            for (name, path) in paths { try PageCacheTests.write(path, contents[name]!, at: 0, flags: O_CREAT | O_TRUNC) }
        }
        try harness.withMount(at: vault, options: Self.options) { mount in
            defer { mount.cacheFill.setBeforePush(nil) }
            try body(mount, paths, &contents)
        }
    }

    /// An open for reading on another thread whose push at open is held half a second, so that
    /// what `body` does meanwhile could overtake it; `released()` says whether the push is in,
    /// `opened()` waits for that open and returns its descriptor.
    private func withHeldPushAtOpen(
        _ body: (FUSEMount, String, inout [UInt8], () -> Bool, () throws -> Descriptor) throws -> Void
    ) throws {
        try withFiles(["f": Self.size]) { mount, paths, contents in
            let path = paths["f"]!
            let held = DispatchSemaphore(value: 0), pushed = Mutex(false)
            mount.cacheFill.setBeforePush { _ in
                held.signal()
                usleep(500_000)
                pushed.withLock { $0 = true }
            }
            let reader = Mutex<Result<Descriptor, any Error>?>(nil), done = DispatchGroup()
            DispatchQueue.global().async(group: done) {
                let result = Result { try Descriptor(path, O_RDONLY) }
                reader.withLock { $0 = result }
            }
            #expect(held.wait(timeout: .now() + 10) == .success, "the open pushed the file")
            mount.cacheFill.setBeforePush(nil)
            try body(mount, path, &contents["f"]!, { pushed.withLock { $0 } }) {
                done.wait()
                return try reader.withLock { $0! }.get()
            }
            done.wait()
        }
    }

    /// The kernel sends a release after close(2) returns: a file's handle counts until it comes.
    static func waitForReleases(_ fs: FileSystem) throws {
        for _ in 0..<1000 where fs.openHandleCount > 0 { usleep(1000) }
        guard fs.openHandleCount == 0 else { throw HarnessError("handles still open: \(fs.openHandleCount)") }
    }

    static func inode(_ path: String) throws -> UInt64 {
        var status = stat()
        guard stat(path, &status) == 0 else { throw HarnessError("stat \(path): errno \(errno)") }
        return UInt64(status.st_ino)
    }

    static func apply(_ patch: [UInt8], at offset: Int, to bytes: inout [UInt8]) {
        if offset + patch.count > bytes.count { bytes += [UInt8](repeating: 0, count: offset + patch.count - bytes.count) }
        bytes.replaceSubrange(offset..<offset + patch.count, with: patch)
    }

    static func resize(_ bytes: inout [UInt8], to size: Int) {
        bytes = size < bytes.count ? Array(bytes[..<size]) : bytes + [UInt8](repeating: 0, count: size - bytes.count)
    }
}

private final class Flags: Sendable {
    let stop = Atomic<Bool>(false)
    let failures = Atomic<Int>(0)
}
