import Glibc

/// The one way DotSafe erases a secret outside locked pages: glibc's `explicit_bzero`, which the
/// optimiser may not remove (a plain loop of `= 0` before a buffer dies may be dropped). Not
/// `OPENSSL_cleanse`, which promises the same but stores 8 bytes at a time: a 256 KiB block took
/// it 4–5 times as long as `explicit_bzero`'s `memset` (11.7–24 against 60–88 GB/s here), and
/// every chunk the cache frees is wiped whole: 5.4–5.5 % of the daemon's samples while two
/// readers read cold, 2.3–3.1 % now (docs/PERFORMANCE.md, "Wiping at memset's speed").
public enum SecureZero {
    public static func wipe(_ bytes: UnsafeMutableRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        explicit_bzero(base, bytes.count)
    }

    public static func wipe(_ base: UnsafeMutableRawPointer, count: Int) {
        wipe(UnsafeMutableRawBufferPointer(start: base, count: count))
    }
}

extension Array where Element == UInt8 {
    /// Zeroes a secret held in an array (a pattern line, a passphrase) before it goes.
    /// An array that shares its storage with a copy is first made unique, so only this copy
    /// is zeroed: for a secret that was copied (into a struct, a tuple), use `wipeStorage`.
    public mutating func wipe() { withUnsafeMutableBytes { SecureZero.wipe($0) } }

    /// Zeroes the storage this array shares with all its copies, without copying it first:
    /// for a decrypted key or record that was decoded into structures that copied the array.
    /// Every copy reads zeros afterwards, which is the point.
    public func wipeStorage() {
        withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            SecureZero.wipe(UnsafeMutableRawPointer(mutating: base), count: bytes.count)
        }
    }
}
