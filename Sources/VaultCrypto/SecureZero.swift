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
    public mutating func wipe() { withUnsafeMutableBytes { SecureZero.wipe($0) } }
}
