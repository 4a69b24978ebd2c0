import DotSafeTestSupport
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing
import VaultCore
import VaultFileSystem
@testable import VaultFUSE

/// A read at random pushes the rest of the chunk it read into the kernel's page cache
/// (`KernelCacheFill`), and no pushed page is ever older than the file: a push held up on its
/// way (as a page the kernel has locked would hold it) still lands before an open that may
/// write, a truncate, or a change behind the kernel, whose reads then see the new bytes.
/// Attributes are kept 60 s, so that no refresh of them hides a stale page.
@Suite(.serialized) struct KernelCacheFillTests {
    static let options = FUSEMount.Options(attributeTimeout: 60, entryTimeout: 60)
    static let size = 1_000_000
    /// Chunks far enough apart for reads at random (`ChunkStore.readAheadReach`); its last
    /// chunk ends inside a page.
    static let largeSize = 10_000_000
    static let chunk = 262_144

    @Test func aReadAtRandomFillsTheRestOfItsChunk() throws {
        try withFile(size: Self.largeSize) { mount, path, bytes in
            let fs = mount.fileSystem
            let file = try Descriptor(path, O_RDONLY)
            func read(_ offset: Int, _ count: Int = 4096) throws -> Bool {
                try file.read(at: offset, count) == Array(bytes[offset..<min(offset + count, bytes.count)])
            }
            #expect(try read(300_000))
            mount.cacheFill.settle()
            let asked = fs.readCount
            for offset in [Self.chunk, 270_000, 400_000, 2 * Self.chunk - 4096] { #expect(try read(offset)) }
            #expect(fs.readCount == asked, "the rest of chunk 1 is in the kernel's cache")

            // Near the last read, as the kernel's read-ahead sends its requests: no push.
            #expect(try read(600_000))
            mount.cacheFill.settle()
            #expect(try read(700_000))
            #expect(fs.readCount == asked + 2, "chunk 2 was not pushed")

            // The last chunk ends inside a page: pushed up to the file's end, which stays.
            let size = Self.largeSize
            #expect(try read(size - 30_000, 100))
            mount.cacheFill.settle()
            let before = fs.readCount
            #expect(try read(size - 1000))
            #expect(try file.read(at: size, 4096).isEmpty)
            #expect(fs.readCount == before)
            #expect(try file.size() == size)

            // The kernel drops its pages (as fio does between its loops): the vault still holds
            // the chunk, and a read at random pushes it again.
            #expect(posix_fadvise(file.fd, 0, 0, POSIX_FADV_DONTNEED) == 0)
            #expect(try read(300_000))
            mount.cacheFill.settle()
            let again = fs.readCount
            #expect(try read(400_000))
            #expect(fs.readCount == again)
            #expect(try PageCacheTests.readAll(path) == bytes)
        }
    }

    @Test func aFileOpenForWritingGetsNoPush() throws {
        try withFile { mount, path, bytes in
            let fs = mount.fileSystem
            let writer = try Descriptor(path, O_RDWR)
            #expect(try writer.read(at: 300_000, 4096) == Array(bytes[300_000..<304_096]))
            mount.cacheFill.settle()
            let asked = fs.readCount
            #expect(try writer.read(at: 400_000, 4096) == Array(bytes[400_000..<404_096]))
            #expect(fs.readCount == asked + 1)
        }
    }

    @Test func anOpenThatMayWriteWaitsForThePushes() throws {
        try withHeldPush { mount, path, bytes, released in
            let newer = [UInt8](repeating: 0xC3, count: Self.chunk)
            let writer = try Descriptor(path, O_RDWR)
            #expect(released(), "the open waited for the push")
            try writer.write(newer, at: Self.chunk)
            // The kernel asks for the attributes after a write, sees the new mtime and drops
            // its pages; a push landing after that would stay (FUSE's auto_inval_data).
            _ = try writer.size()
            mount.cacheFill.settle()
            #expect(try writer.read(at: Self.chunk, Self.chunk) == newer, "the write's bytes, not the push's older ones")
            bytes.replaceSubrange(Self.chunk..<2 * Self.chunk, with: newer)
            #expect(try PageCacheTests.readAll(path) == bytes)
        }
    }

    @Test func aTruncateWaitsForThePushes() throws {
        try withHeldPush(chunkRead: 3) { mount, path, bytes, released in
            let reader = try Descriptor(path, O_RDONLY)
            #expect(truncate(path, 300_000) == 0)
            #expect(released(), "the truncate's reply waited for the push")
            #expect(try reader.size() == 300_000, "the push did not move the file's end back")
            #expect(try reader.read(at: 800_000, 4096).isEmpty)
            #expect(try PageCacheTests.readAll(path) == Array(bytes[..<300_000]))
        }
    }

    @Test func aChangeBehindTheKernelIsDroppedAfterThePushes() throws {
        try withHeldPush { mount, path, bytes, released in
            let reader = try Descriptor(path, O_RDONLY)
            var status = stat()
            try #require(stat(path, &status) == 0)
            let newer = [UInt8](repeating: 0x3C, count: Self.chunk)
            // As a sync changes a file: in the vault, then the kernel told.
            try mount.fileSystem.vault.write(UInt64(status.st_ino), offset: UInt64(Self.chunk), bytes: newer)
            mount.invalidate(items: [UInt64(status.st_ino)], names: [])
            // As after a write: attributes asked for again between the change and the push.
            _ = try reader.size()
            mount.cacheFill.settle()
            #expect(released())
            #expect(try reader.read(at: Self.chunk, Self.chunk) == newer, "an open reader sees the change, not the push")
            bytes.replaceSubrange(Self.chunk..<2 * Self.chunk, with: newer)
            #expect(try PageCacheTests.readAll(path) == bytes)
        }
    }

    /// While a push is held up, a chunk already waiting is not queued again, and no more than
    /// `maximumQueued` pushes wait in all (the rest are dropped).
    @Test func aWaitingChunkIsQueuedOnceAndAtMostSixtyFourWait() throws {
        try withFile(size: Self.largeSize) { mount, path, bytes in
            let other = path + "2"
            try PageCacheTests.write(other, bytes, at: 0, flags: O_CREAT | O_TRUNC)
            // Both files whole in the vault's cache: every chunk can be pushed. Read from the
            // end: a sequential reader keeps only the chunks near it (`ChunkStore.dropRead`).
            #expect(try Self.readBackwards(path, bytes) && Self.readBackwards(other, bytes))
            mount.cacheFill.settle()
            var status = stat()
            try #require(stat(path, &status) == 0)
            let first = UInt64(status.st_ino)
            try #require(stat(other, &status) == 0)
            let second = UInt64(status.st_ino)
            let chunks = (Self.largeSize + Self.chunk - 1) / Self.chunk

            let held = DispatchSemaphore(value: 0), gate = DispatchSemaphore(value: 0)
            let pushes = Mutex<[UInt64: Int]>([:])
            mount.cacheFill.setBeforePush { inode in
                let count = pushes.withLock { pushes in
                    pushes[inode, default: 0] += 1
                    return pushes.values.reduce(0, +)
                }
                if count == 1 {
                    held.signal()
                    gate.wait()
                }
            }
            let fs = mount.fileSystem
            mount.cacheFill.fill(first, chunk: 0, from: fs)
            #expect(held.wait(timeout: .now() + 10) == .success)
            for index in 0..<chunks {
                mount.cacheFill.fill(first, chunk: index, from: fs)
                mount.cacheFill.fill(first, chunk: index, from: fs)
            }
            for index in 0..<chunks { mount.cacheFill.fill(second, chunk: index, from: fs) }
            gate.signal()
            mount.cacheFill.settle()
            let counted = pushes.withLock { $0 }
            #expect(counted[first] == chunks, "each chunk of the first file pushed once")
            #expect(counted[second] == KernelCacheFill.maximumQueued - chunks, "the queue full, the rest dropped")
        }
    }

    /// Whether the file reads as `bytes`, a chunk at a time from its end.
    static func readBackwards(_ path: String, _ bytes: [UInt8]) throws -> Bool {
        let reader = try Descriptor(path, O_RDONLY)
        for start in stride(from: (bytes.count - 1) / chunk * chunk, through: 0, by: -chunk) {
            let end = min(start + chunk, bytes.count)
            guard try reader.read(at: start, end - start) == Array(bytes[start..<end]) else { return false }
        }
        return true
    }

    /// Reads far apart (pushes), writes from descriptors opened for them, truncates by path,
    /// at random; every read, and the whole file through a descriptor kept open, equal to the
    /// file as written.
    @Test func randomReadsWritesAndTruncatesReadBackWhatWasWritten() throws {
        try withFile(size: Self.largeSize) { mount, path, bytes in
            var random = SeededGenerator(seed: 17)
            let reader = try Descriptor(path, O_RDONLY)
            func checkRead(_ offset: Int, _ count: Int) throws {
                let expected = offset < bytes.count ? Array(bytes[offset..<min(offset + count, bytes.count)]) : []
                #expect(try reader.read(at: offset, count) == expected, "read of \(count) at \(offset)")
            }
            for step in 0..<300 {
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<5:
                    // Near the start or near the end: far from the previous read.
                    let near = Int.random(in: 0..<2, using: &random) == 0 ? 0 : max(0, bytes.count - 2 * Self.chunk)
                    try checkRead(near + Int.random(in: 0..<2 * Self.chunk, using: &random), Int.random(in: 1...65_536, using: &random))
                case 5..<8:
                    let offset = Int.random(in: 0...bytes.count + 10_000, using: &random)
                    let patch = (0..<Int.random(in: 1...100_000, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                    try Descriptor(path, O_WRONLY).write(patch, at: offset)
                    if offset > bytes.count { bytes += [UInt8](repeating: 0, count: offset - bytes.count) }
                    bytes.replaceSubrange(offset..<min(offset + patch.count, bytes.count), with: patch)
                default:
                    let size = Int.random(in: 5_000_000...12_000_000, using: &random)
                    #expect(truncate(path, off_t(size)) == 0)
                    bytes = size < bytes.count ? Array(bytes[..<size]) : bytes + [UInt8](repeating: 0, count: size - bytes.count)
                }
                if step % 25 == 24 {
                    mount.cacheFill.settle()
                    #expect(try reader.read(at: 0, bytes.count + 4096) == bytes, "step \(step)")
                }
            }
        }
    }

    /// Three readers at random (pushing as they go) on their own threads while a writer opens,
    /// writes, closes and truncates: nothing waits on anything that waits on it (the test ends),
    /// and once they stop the file reads back as written, through a descriptor kept open all
    /// along and through a new one.
    @Test func readersAtRandomBesideAWriterLeaveTheFileAsWritten() throws {
        try withFile(size: Self.largeSize) { mount, path, bytes in
            var random = SeededGenerator(seed: 29)
            let kept = try Descriptor(path, O_RDONLY)
            let flags = ReaderFlags()
            let readers = DispatchGroup()
            for seed in 0..<3 {
                DispatchQueue.global().async(group: readers) {
                    var random = SeededGenerator(seed: UInt64(100 + seed))
                    guard let reader = try? Descriptor(path, O_RDONLY) else {
                        flags.failures.add(1, ordering: .relaxed)
                        return
                    }
                    while !flags.stop.load(ordering: .relaxed) {
                        if (try? reader.read(at: Int.random(in: 0..<Self.largeSize, using: &random), 4096)) == nil {
                            flags.failures.add(1, ordering: .relaxed)
                        }
                    }
                }
            }
            for round in 0..<40 {
                if round % 10 == 9 {
                    let size = Int.random(in: 8_000_000...11_000_000, using: &random)
                    #expect(truncate(path, off_t(size)) == 0)
                    bytes = size < bytes.count ? Array(bytes[..<size]) : bytes + [UInt8](repeating: 0, count: size - bytes.count)
                } else {
                    let offset = Int.random(in: 0..<bytes.count, using: &random)
                    let patch = [UInt8](repeating: UInt8(round + 1), count: Int.random(in: 1...300_000, using: &random))
                    try Descriptor(path, O_RDWR).write(patch, at: offset)
                    if offset + patch.count > bytes.count { bytes += [UInt8](repeating: 0, count: offset + patch.count - bytes.count) }
                    bytes.replaceSubrange(offset..<offset + patch.count, with: patch)
                }
                usleep(20_000)
            }
            flags.stop.store(true, ordering: .relaxed)
            readers.wait()
            mount.cacheFill.settle()
            #expect(flags.failures.load(ordering: .relaxed) == 0)
            #expect(try kept.read(at: 0, bytes.count + 4096) == bytes)
            #expect(try PageCacheTests.readAll(path) == bytes)
        }
    }

    // MARK: Helpers

    /// A file of `size` bytes written, the mount made again (both caches cold), then `body`.
    private func withFile(size: Int = Self.size, _ body: (FUSEMount, String, inout [UInt8]) throws -> Void) throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        let path = vault + "/f"
        var bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 9) }
        try harness.withMount(at: vault, options: Self.options) { _ in
            try PageCacheTests.write(path, bytes, at: 0, flags: O_CREAT | O_TRUNC)
        }
        try harness.withMount(at: vault, options: Self.options) { mount in
            defer { mount.cacheFill.setBeforePush(nil) }
            try body(mount, path, &bytes)
        }
    }

    /// A read at random in chunk `chunkRead`, whose push is held until what `body` does next
    /// has had time to overtake it; `released()` says whether it had to wait for the push.
    private func withHeldPush(chunkRead: Int = 1,
                              _ body: (FUSEMount, String, inout [UInt8], () -> Bool) throws -> Void) throws {
        try withFile { mount, path, bytes in
            let held = DispatchSemaphore(value: 0)
            let pushed = Mutex(false)
            mount.cacheFill.setBeforePush { _ in
                held.signal()
                usleep(500_000)
                pushed.withLock { $0 = true }
            }
            let offset = chunkRead * Self.chunk + 10_000
            let reader = try Descriptor(path, O_RDONLY)
            #expect(try reader.read(at: offset, 4096) == Array(bytes[offset..<offset + 4096]))
            #expect(held.wait(timeout: .now() + 10) == .success, "a push was queued")
            try body(mount, path, &bytes) { pushed.withLock { $0 } }
        }
    }
}

private final class ReaderFlags: Sendable {
    let stop = Atomic<Bool>(false)
    let failures = Atomic<Int>(0)
}
