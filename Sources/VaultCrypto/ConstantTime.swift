import CLibCrypto

/// Comparisons of secret values (MACs, key check values) whose running time must not depend on
/// where the first difference is, or an attacker who can time them learns the secret byte by byte.
public enum ConstantTime {
    /// `CRYPTO_memcmp` over equal lengths; `false` at once for different lengths, since lengths are
    /// public in every place DotSafe compares.
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
        }
    }
}
