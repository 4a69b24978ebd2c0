import CLibCrypto

/// The one way DotSafe erases a secret outside locked pages: `OPENSSL_cleanse`, which the
/// optimiser may not remove (a plain loop of `= 0` before a buffer dies may be dropped).
public enum SecureZero {
    public static func wipe(_ bytes: UnsafeMutableRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        OPENSSL_cleanse(base, bytes.count)
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
