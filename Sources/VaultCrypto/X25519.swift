import CLibCrypto

/// X25519 key agreement (RFC 7748), for wrapping vault keys to a recipient's public key.
public enum X25519 {
    /// Size of a scalar, a public key and a shared secret.
    public static let keySize = 32

    /// A private scalar, kept in locked memory, with its public key.
    public struct PrivateKey: Sendable {
        private let scalar: SecretBytes

        /// The 32-byte public key (u-coordinate).
        public let publicKey: [UInt8]

        /// A new key pair; 32 bytes from `random` become the scalar (OpenSSL clamps it when used).
        /// Taking the random source lets tests derive reproducible keys and check failure handling.
        public init(using random: any RandomSource = SystemRandom()) throws {
            try self.init(scalar: SecretBytes.random(count: keySize, using: random))
        }

        /// Restores a key from its 32-byte scalar. The caller wipes its array.
        public init(rawRepresentation: [UInt8]) throws {
            guard rawRepresentation.count == keySize else {
                throw CryptoError.invalidKeySize(expected: keySize, actual: rawRepresentation.count)
            }
            try self.init(scalar: SecretBytes(copying: rawRepresentation))
        }

        /// Takes ownership of `scalar` (HPKE's DeriveKeyPair makes one in locked memory).
        init(scalar: SecretBytes) throws {
            self.scalar = scalar
            publicKey = try X25519.withPrivateKey(scalar) { key in
                var publicKey = [UInt8](repeating: 0, count: keySize)
                var length = keySize
                try OpenSSLCall.check(EVP_PKEY_get_raw_public_key(key, &publicKey, &length),
                                      "EVP_PKEY_get_raw_public_key")
                guard length == keySize else { throw OpenSSLCall.failure("EVP_PKEY_get_raw_public_key") }
                return publicKey
            }
        }

        /// The scalar, for storing the key inside an encrypted keyring. Shared, not copied: do not
        /// wipe it while this key is still in use.
        public var rawRepresentation: SecretBytes { scalar }

        /// The raw X25519 output. Hash it (HKDF with both public keys in `info`) before use as a key.
        /// Throws `.weakSharedSecret` for a low-order peer point (all-zero result), and
        /// `.invalidInput` for a peer key that is not 32 bytes.
        public func sharedSecret(with peerPublicKey: [UInt8]) throws -> SecretBytes {
            guard peerPublicKey.count == keySize else {
                throw CryptoError.invalidInput("X25519 public key must be \(keySize) bytes, got \(peerPublicKey.count)")
            }
            let peer = try OpenSSLCall.check(
                EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nil, peerPublicKey, keySize), "EVP_PKEY_new_raw_public_key")
            defer { EVP_PKEY_free(peer) }
            let secret = try SecretBytes(count: keySize)
            try X25519.withPrivateKey(scalar) { key in
                let context = try OpenSSLCall.check(EVP_PKEY_CTX_new(key, nil), "EVP_PKEY_CTX_new")
                defer { EVP_PKEY_CTX_free(context) }
                try OpenSSLCall.check(EVP_PKEY_derive_init(context), "EVP_PKEY_derive_init")
                // No peer validation here: X25519 has none beyond the all-zero check below.
                try OpenSSLCall.check(EVP_PKEY_derive_set_peer_ex(context, peer, 0), "EVP_PKEY_derive_set_peer_ex")
                var length = keySize
                let derived = secret.withUnsafeMutableBytes {
                    EVP_PKEY_derive(context, $0.bindMemory(to: UInt8.self).baseAddress, &length)
                }
                guard derived == 1 else {
                    // OpenSSL itself refuses an all-zero result, with this reason.
                    let reason = ERR_GET_REASON(ERR_peek_last_error())
                    ERR_clear_error()
                    if reason == PROV_R_FAILED_DURING_DERIVATION { throw CryptoError.weakSharedSecret }
                    throw CryptoError.library("EVP_PKEY_derive")
                }
                guard length == keySize else { throw OpenSSLCall.failure("EVP_PKEY_derive") }
            }
            // Checked here too, so the guarantee does not rest on one provider's behaviour.
            let allZero = secret.withUnsafeBytes { bytes in
                [UInt8](repeating: 0, count: keySize).withUnsafeBytes { CRYPTO_memcmp(bytes.baseAddress!, $0.baseAddress!, keySize) == 0 }
            }
            if allZero {
                secret.wipe()
                throw CryptoError.weakSharedSecret
            }
            return secret
        }
    }

    /// Gives `body` a transient `EVP_PKEY` for `scalar`; OpenSSL clears its copy when it is freed.
    private static func withPrivateKey<R>(_ scalar: SecretBytes, _ body: (OpaquePointer) throws -> R) throws -> R {
        let key = try scalar.withUnsafeBytes { scalar in
            try OpenSSLCall.check(
                EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, scalar.bindMemory(to: UInt8.self).baseAddress, scalar.count),
                "EVP_PKEY_new_raw_private_key")
        }
        defer { EVP_PKEY_free(key) }
        return try body(key)
    }
}
