import CLibCrypto

/// scrypt (RFC 7914, OpenSSL's `EVP_KDF` "SCRYPT"): a memory-hard alternative to PBKDF2 for the
/// pattern key. It needs `128 · N · r` bytes per guess, which is what makes a GPU farm pay for
/// memory, not only for arithmetic. The caller chooses N, r and p; here they are only checked
/// for what OpenSSL accepts and for a memory bound, so that a planted keyring cannot make a
/// process allocate gigabytes.
public enum Scrypt {
    /// The most memory one derivation may use (2 GiB): far above DotSafe's 128 MiB default.
    public static let maximumMemory: UInt64 = 2 << 30

    /// Bytes of memory N and r ask for (RFC 7914 §5: V is N blocks of 128·r bytes).
    public static func memory(n: UInt64, r: UInt64) -> UInt64 {
        let (product, overflow) = n.multipliedReportingOverflow(by: r)
        guard !overflow, product <= UInt64.max / 128 else { return .max }
        return product * 128
    }

    /// The derived key, in locked memory. `n` must be a power of two above 1. The caller wipes
    /// `password`.
    public static func deriveKey(password: [UInt8], salt: [UInt8], n: UInt64, r: UInt32, p: UInt32,
                                 count: Int) throws -> SecretBytes {
        try password.withUnsafeBytes { try deriveKey(password: $0, salt: salt, n: n, r: r, p: p, count: count) }
    }

    /// The same from a password in locked memory (a pattern's canonical bytes).
    public static func deriveKey(password: SecretBytes, salt: [UInt8], n: UInt64, r: UInt32, p: UInt32,
                                 count: Int) throws -> SecretBytes {
        try password.withUnsafeBytes { try deriveKey(password: $0, salt: salt, n: n, r: r, p: p, count: count) }
    }

    private static func deriveKey(password: UnsafeRawBufferPointer, salt: [UInt8], n: UInt64, r: UInt32, p: UInt32,
                                  count: Int) throws -> SecretBytes {
        guard n > 1, n & (n - 1) == 0 else { throw CryptoError.invalidInput("scrypt N must be a power of two above 1, got \(n)") }
        guard r >= 1, p >= 1, UInt64(r) * UInt64(p) < 1 << 30 else {
            throw CryptoError.invalidInput("scrypt r and p must be at least 1 and r·p below 2^30, got r \(r), p \(p)")
        }
        guard memory(n: n, r: UInt64(r)) <= maximumMemory else {
            throw CryptoError.invalidInput("scrypt N \(n), r \(r) needs more than \(maximumMemory >> 20) MiB")
        }
        guard count >= 1, count <= 1 << 20 else { throw CryptoError.invalidInput("scrypt output size must be 1...2^20, got \(count)") }
        let kdf = try OpenSSLCall.check(EVP_KDF_fetch(nil, "SCRYPT", nil), "EVP_KDF_fetch(SCRYPT)")
        defer { EVP_KDF_free(kdf) }
        let context = try OpenSSLCall.check(EVP_KDF_CTX_new(kdf), "EVP_KDF_CTX_new")
        defer { EVP_KDF_CTX_free(context) }  // clears its copy of the password
        let key = try SecretBytes(count: count)
        var n = n, r = r, p = p
        // OpenSSL's own default limit is 1 GiB; ours is stated above and checked already.
        var maximum = maximumMemory + 1 << 20
        // A one-byte stand-in keeps OpenSSL from seeing a NULL buffer for an empty password or salt.
        var stand: [UInt8] = [0]
        // Every OSSL_PARAM name stays alive for the whole call (PLATFORM-NOTES: OSSL_PARAM keeps the pointer).
        let ok = OSSL_KDF_PARAM_PASSWORD.withCString { passwordName in
            OSSL_KDF_PARAM_SALT.withCString { saltName in
            OSSL_KDF_PARAM_SCRYPT_N.withCString { nName in
            OSSL_KDF_PARAM_SCRYPT_R.withCString { rName in
            OSSL_KDF_PARAM_SCRYPT_P.withCString { pName in
            OSSL_KDF_PARAM_SCRYPT_MAXMEM.withCString { maximumName in
            salt.withUnsafeBytes { salt in
            stand.withUnsafeMutableBytes { stand in
            key.withUnsafeMutableBytes { out -> Int32 in
                let passwordBase = password.count > 0 ? UnsafeMutableRawPointer(mutating: password.baseAddress!) : stand.baseAddress!
                let saltBase = salt.count > 0 ? UnsafeMutableRawPointer(mutating: salt.baseAddress!) : stand.baseAddress!
                var params: [OSSL_PARAM] = [
                    OSSL_PARAM_construct_octet_string(passwordName, passwordBase, password.count),
                    OSSL_PARAM_construct_octet_string(saltName, saltBase, salt.count),
                    OSSL_PARAM_construct_uint64(nName, &n),
                    OSSL_PARAM_construct_uint32(rName, &r),
                    OSSL_PARAM_construct_uint32(pName, &p),
                    OSSL_PARAM_construct_uint64(maximumName, &maximum),
                    OSSL_PARAM_construct_end(),
                ]
                return EVP_KDF_derive(context, out.bindMemory(to: UInt8.self).baseAddress, out.count, &params)
            }
            }
            }
            }
            }
            }
            }
            }
        }
        guard ok == 1 else {
            key.wipe()
            throw OpenSSLCall.failure("EVP_KDF_derive(SCRYPT)")
        }
        return key
    }
}
