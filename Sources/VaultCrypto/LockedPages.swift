import CLibCrypto
import Glibc

/// Owns one anonymous private mapping that holds key material. This is the only place that talks
/// to `mmap`/`mlock`/`madvise`, so every secret in the process gets the same treatment:
///
/// - its own pages (`mmap`), so no other allocation shares them and nothing moves them, unlike
///   Swift arrays, which copy on write and on growth and leave stale copies behind;
/// - `mlock`, so the kernel does not write them to swap; failure (RLIMIT_MEMLOCK, 8 MiB by default
///   for a user) is recorded in `isLocked` rather than thrown, see `CryptoError.memoryLockFailed`;
/// - `MADV_DONTDUMP`, so a core dump does not contain them;
/// - `MADV_WIPEONFORK`, so a forked child (e.g. a helper spawned by the CLI) sees zeros;
/// - zeroed with `SecureZero` (`explicit_bzero`), then unlocked and unmapped, when the owner goes away.
///
/// `@unchecked Sendable` so that `SecretPagePool` can hand mappings between threads: the fields are
/// immutable, and access to the bytes is governed by the owner (`SecretBytes`, `SecretArena`).
final class LockedPages: @unchecked Sendable {
    /// Start of the mapping; page aligned, valid until deinit.
    let base: UnsafeMutableRawPointer
    /// Whole pages mapped; at least one page even for a zero-byte request.
    let mappedByteCount: Int
    /// Bytes from the start of the mapping that `mlock` locked: all of it, or a prefix when the
    /// caller asked for less (`PlaintextPool`'s share of RLIMIT_MEMLOCK), or none when it failed.
    let lockedByteCount: Int
    /// Whether the whole mapping is locked.
    var isLocked: Bool { lockedByteCount == mappedByteCount }

    static let pageSize: Int = {
        let size = sysconf(Int32(_SC_PAGESIZE))
        return size > 0 ? size : 4096
    }()

    /// Rounds `byteCount` up to whole pages (at least one).
    static func roundedToPages(_ byteCount: Int) -> Int {
        let page = pageSize
        return max(1, (byteCount + page - 1) / page) * page
    }

    /// Maps `byteCount` bytes (whole pages), locking at most `lockLimit` bytes of them (rounded
    /// down to whole pages; all of them by default).
    init(byteCount: Int, lockLimit: Int = .max) throws {
        guard byteCount >= 0, byteCount <= Int.max - LockedPages.pageSize else {
            throw CryptoError.invalidInput("secret size out of range: \(byteCount)")
        }
        let length = LockedPages.roundedToPages(byteCount)
        let mapped = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let mapped, mapped != UnsafeMutableRawPointer(bitPattern: -1) /* MAP_FAILED */ else {
            throw CryptoError.library("mmap")
        }
        // Not dumpable is a hard requirement: every Linux since 3.4 supports it.
        guard madvise(mapped, length, MADV_DONTDUMP) == 0 else {
            munmap(mapped, length)
            throw CryptoError.library("madvise(MADV_DONTDUMP)")
        }
        // Linux 4.14+. Older kernels and some sandboxes answer EINVAL; the pages are then merely
        // copied into a forked child, which DotSafe never does while keys are loaded, so go on.
        _ = madvise(mapped, length, MADV_WIPEONFORK)
        let lockLength = min(length, max(0, lockLimit) / LockedPages.pageSize * LockedPages.pageSize)
        self.lockedByteCount = lockLength > 0 && mlock(mapped, lockLength) == 0 ? lockLength : 0
        self.base = mapped
        self.mappedByteCount = length
    }

    /// Zeroes `count` bytes at `offset`, in a way the optimiser may not remove.
    func cleanse(offset: Int = 0, count: Int? = nil) {
        let length = count ?? (mappedByteCount - offset)
        precondition(offset >= 0 && length >= 0 && offset + length <= mappedByteCount)
        SecureZero.wipe(base + offset, count: length)
    }

    /// Gives `count` bytes at `offset` (whole pages) back to the system while the mapping, its
    /// address and its no-dump flags stay: unlocked first, as the kernel keeps locked pages, then
    /// dropped; the next touch reads zeros. The plaintext pool's free frames (`PlaintextPool`).
    func release(offset: Int, count: Int) {
        precondition(offset >= 0 && count >= 0 && offset + count <= mappedByteCount && offset % Self.pageSize == 0)
        if offset < lockedByteCount { munlock(base + offset, min(count, lockedByteCount - offset)) }
        _ = madvise(base + offset, count, MADV_DONTNEED)
    }

    /// Locks again, and so brings back, what `release` gave back of the part locked at first;
    /// a failure leaves those pages unlocked, as a budget that ran out would.
    func reacquire(offset: Int, count: Int) {
        precondition(offset >= 0 && count >= 0 && offset + count <= mappedByteCount)
        if offset < lockedByteCount { _ = mlock(base + offset, min(count, lockedByteCount - offset)) }
    }

    deinit {
        SecureZero.wipe(base, count: mappedByteCount)
        if lockedByteCount > 0 { munlock(base, lockedByteCount) }
        munmap(base, mappedByteCount)
    }
}
