/// Key material with one owner that locks it in memory and zeroes it when done.
///
/// A class rather than a `~Copyable` struct because keys are handed across threads and stored in
/// caches; what matters is that the *bytes* are never copied by the language, and they are not:
/// they live in their own `mmap`ed, `mlock`ed, no-dump pages (see `LockedPages`) and leave only
/// through `copyBytes()` or the `with…Bytes` closures. Each instance costs at least one page, so
/// store many small keys in a `SecretArena` instead. Single pages are recycled through
/// `SecretPagePool` (zeroed on release, kept locked) because fresh mappings cost more than a KDF.
///
/// `@unchecked Sendable` holds because the storage address and size never change after `init`,
/// and the contract is: contents are written only while the instance is still private to its
/// creator (filling it inside `init`/`random`/a KDF), after which it is only read, except for
/// `wipe()`, which callers use when no other thread can still be reading the key (e.g. at unmount).
public final class SecretBytes: @unchecked Sendable {
    private let pages: LockedPages
    private let isPooled: Bool

    /// Number of usable bytes (the mapping behind it is rounded up to whole pages).
    public let count: Int

    /// Whether the bytes are locked in RAM. `false` means `mlock` hit RLIMIT_MEMLOCK: the key works
    /// but could be swapped out, which callers may want to report.
    public var isLocked: Bool { pages.isLocked }

    /// A zero-filled secret of `count` bytes.
    public init(count: Int) throws {
        // Fresh anonymous mappings start zeroed; pooled ones were cleansed when recycled.
        isPooled = count >= 0 && count <= LockedPages.pageSize
        pages = isPooled ? try SecretPagePool.shared.take() : try LockedPages(byteCount: count)
        self.count = count
    }

    deinit {
        // Zeroes the page now; a non-pooled mapping zeroes itself in its own deinit.
        if isPooled { SecretPagePool.shared.recycle(pages) }
    }

    /// Copies `bytes` into locked memory. The caller still owns, and must wipe, its array.
    public convenience init(copying bytes: [UInt8]) throws {
        try self.init(count: bytes.count)
        bytes.withUnsafeBytes { source in
            guard let address = source.baseAddress, source.count > 0 else { return }
            pages.base.copyMemory(from: address, byteCount: source.count)
        }
    }

    /// Copies raw bytes (from argv, from a read buffer) into locked memory; the caller wipes the source.
    public convenience init(copying bytes: UnsafeRawBufferPointer) throws {
        try self.init(count: bytes.count)
        guard let address = bytes.baseAddress, bytes.count > 0 else { return }
        pages.base.copyMemory(from: address, byteCount: bytes.count)
    }

    /// `count` bytes from `random`, written straight into locked memory.
    public static func random(count: Int, using random: any RandomSource = SystemRandom()) throws -> SecretBytes {
        let secret = try SecretBytes(count: count)
        do {
            try secret.withUnsafeMutableBytes { try random.fill($0) }
        } catch {
            secret.wipe()
            throw error
        }
        return secret
    }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pages.base, count: count))
    }

    /// For filling a fresh secret only; see the type's Sendable contract.
    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: pages.base, count: count))
    }

    /// Copies the key out, for encoding into a structure that is about to be encrypted. The copy
    /// is an ordinary array: the caller must wipe it.
    public func copyBytes() -> [UInt8] {
        [UInt8](UnsafeRawBufferPointer(start: pages.base, count: count))
    }

    /// Zeroes the key now, rather than when the last reference goes away.
    public func wipe() {
        pages.cleanse()
    }
}
