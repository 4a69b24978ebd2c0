import CSystem
import Glibc
import Synchronization

/// Storage files moved past the kernel's page cache (O_DIRECT): a stream's chunks read, a new
/// group's files written. Through the cache each costs a copy into or out of it, the cache's
/// own bookkeeping, and memory the kernel holds twice (the plaintext is cached by FUSE anyway);
/// docs/PERFORMANCE.md, "Storage files past the page cache". The device wants its transfers
/// aligned: 4 KiB covers every logical block size Linux has. A file system that refuses
/// O_DIRECT (EINVAL) gets the ordinary calls instead. Pointer code stays here; the calls are
/// `Syscalls.retrying`'s (EINTR) like every other.
enum DirectIO {
    static let flag = dotsafe_o_direct()
    static let alignment = 4096

    /// A whole file opened with O_DIRECT, into page-aligned memory inside an array; nil when the
    /// file system refuses the read, which the caller then makes through the cache.
    static func readWhole(_ fd: Int32, count: Int) throws -> ArraySlice<UInt8>? {
        let length = (count + alignment - 1) / alignment * alignment
        var start = 0, refused = false
        let bytes = try [UInt8](unsafeUninitializedCapacity: length + alignment - 1) { buffer, done in
            let base = buffer.baseAddress!
            start = (alignment - Int(bitPattern: base) % alignment) % alignment
            base.initialize(repeating: 0, count: start)
            done = start
            var read = 0
            while read < count {
                let n: Int
                do { n = try Syscalls.retrying("read") { pread(fd, base + start + read, length - read, off_t(read)) } } catch StoreError.system(_, EINVAL) where read == 0 {
                    refused = true
                    return
                }
                // A short read inside the file leaves the next one unaligned: not expected of a
                // local file system, and treated as a damaged file rather than read around.
                if n == 0 || (read + n < count && (read + n) % alignment != 0) { throw StoreError.unusableFile("(short read)") }
                read += n
            }
            done = start + count
        }
        return refused ? nil : bytes[start..<start + count]
    }

    /// A new unnamed file in the folder opened with O_DIRECT, or nil where the file system has
    /// no O_TMPFILE or no O_DIRECT (`Syscalls.openUnnamed` then decides which).
    static func openUnnamed(_ folder: Int32) -> Int32? {
        let fd = dotsafe_open_unnamed_direct(folder)
        return fd >= 0 ? fd : nil
    }

    /// Writes `bytes` at the start of `fd` (opened by `openUnnamed`): its whole pages past the
    /// cache, copied into `staging` first (the device reads aligned memory), then the few bytes
    /// after the last whole page through the cache (O_DIRECT cleared: a direct write must end on
    /// a block, and padding it then truncating would read the block back). When the file system
    /// refuses the direct write, all of it goes through the cache.
    ///
    /// The file's blocks are taken first, all at once (`fallocate`): the direct write takes its
    /// blocks at once and the last one only at write-back, when the next files' blocks lie
    /// after them, so the file would lie in two pieces on the disk where a file written through
    /// the cache lies in one, and an observer of the disk could tell a vault's files from the
    /// covers by it (R-DEN-1, docs/FORMAT.md §3 and §11).
    static func write(_ fd: Int32, _ bytes: [UInt8], staging: AlignedBuffers.Buffer) throws {
        Syscalls.allocate(fd, bytes.count)
        let whole = min(bytes.count / alignment * alignment, staging.count)
        var done = 0
        if whole > 0 {
            bytes.withUnsafeBytes { staging.pointer.copyMemory(from: $0.baseAddress!, byteCount: whole) }
            while done < whole {
                do { done += try Syscalls.retrying("write") { pwrite(fd, staging.pointer + done, whole - done, off_t(done)) } } catch StoreError.system(_, EINVAL) where done == 0 {
                    break
                }
                if done < whole && done % alignment != 0 { break }  // the rest through the cache
            }
        }
        let flags = try Syscalls.retrying("fcntl") { fcntl(fd, F_GETFL) }
        _ = try Syscalls.retrying("fcntl") { fcntl(fd, F_SETFL, flags & ~flag) }
        if done < bytes.count { try Syscalls.writeFully(fd, Array(bytes[done...]), offset: done) }
    }
}

/// Page-aligned buffers of one storage file's whole pages, kept for reuse: a fresh mapping per
/// file would fault in its pages each time, which on a VM costs the host's faults too.
final class AlignedBuffers: Sendable {
    struct Buffer: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        let count: Int
    }

    private let count: Int
    private let kept: Mutex<[Buffer]> = Mutex([])
    private let keep = 4

    init(count: Int) { self.count = count }

    deinit { kept.withLock { $0.forEach { $0.pointer.deallocate() } } }

    func withBuffer<R>(_ body: (Buffer) throws -> R) rethrows -> R {
        let buffer = kept.withLock { $0.popLast() }
            ?? Buffer(pointer: .allocate(byteCount: count, alignment: DirectIO.alignment), count: count)
        defer {
            let spare = kept.withLock { kept -> Buffer? in
                guard kept.count < keep else { return buffer }
                kept.append(buffer)
                return nil
            }
            spare?.pointer.deallocate()
        }
        return try body(buffer)
    }
}
