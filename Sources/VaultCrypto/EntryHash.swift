import CLibCrypto

/// The folder-entry hash of index version 3 (docs/FORMAT.md §15.3):
/// `H(name) = u32be(HMAC-SHA256(EHK, name)[0..4]) >> 1`, 31 bits. Keyed with the vault's random
/// entry hash key, so that no set of names can be made to fill one entry record.
public struct EntryHash: Sendable {
    private let key: SecretBytes

    /// `key`: EHK, 32 bytes; the caller keeps it and wipes it.
    public init(key: SecretBytes) throws {
        guard key.count == 32 else { throw CryptoError.invalidInput("the entry hash key has 32 bytes") }
        self.key = key
    }

    public func callAsFunction(_ name: [UInt8]) throws -> UInt32 {
        var digest = [UInt8](repeating: 0, count: SHA256.size)
        var length = 0
        try key.withUnsafeBytes { keyBytes in
            try name.withUnsafeBytes { message in
                try digest.withUnsafeMutableBytes { output in
                    let result = EVP_Q_mac(nil, "HMAC", nil, "SHA256", nil, keyBytes.baseAddress, keyBytes.count,
                                           message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
                                           output.baseAddress?.assumingMemoryBound(to: UInt8.self), output.count, &length)
                    guard result != nil, length == SHA256.size else { throw CryptoError.library("EVP_Q_mac(HMAC-SHA256)") }
                }
            }
        }
        let hash = (UInt32(digest[0]) << 24 | UInt32(digest[1]) << 16 | UInt32(digest[2]) << 8 | UInt32(digest[3])) >> 1
        digest.wipe()
        return hash
    }
}
