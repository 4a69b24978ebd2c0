import CLibCrypto

/// HKDF-SHA256 (RFC 5869, extract then expand), used to derive every subkey from one master key,
/// one call per 256 KiB chunk, so it is kept cheap: the KDF is fetched once, and the output lands
/// straight in its final buffer.
///
/// An empty `salt` means "no salt" (RFC 5869 §2.2: HashLen zero bytes, which HMAC treats exactly like
/// an empty key); an empty `info` means no context. Give every use its own `info` label.
public enum HKDF {
    /// SHA-256 output size; RFC 5869 caps the output at 255 of these.
    public static let hashSize = 32
    public static let maximumOutputSize = 255 * hashSize

    /// A subkey in locked memory.
    public static func deriveKey(from ikm: SecretBytes, salt: [UInt8], info: [UInt8], count: Int) throws -> SecretBytes {
        try ikm.withUnsafeBytes { try derivedKey(ikm: $0, salt: salt, info: info, count: count) }
    }

    /// A subkey derived from a key held in a `SecretArena` (e.g. a per-file key), without first
    /// copying that key into a page of its own.
    public static func deriveKey(from slot: SecretArena.Slot, in arena: SecretArena, salt: [UInt8], info: [UInt8],
                                 count: Int) throws -> SecretBytes {
        try arena.withBytes(slot) { try derivedKey(ikm: $0, salt: salt, info: info, count: count) }
    }

    /// Derived bytes that are not themselves secret (e.g. a file-name tweak); in an ordinary array.
    public static func deriveBytes(from ikm: SecretBytes, salt: [UInt8], info: [UInt8], count: Int) throws -> [UInt8] {
        try ikm.withUnsafeBytes { try derivedArray(ikm: $0, salt: salt, info: info, count: count) }
    }

    /// For test vectors, where the input key is public anyway.
    public static func deriveBytes(ikm: [UInt8], salt: [UInt8], info: [UInt8], count: Int) throws -> [UInt8] {
        try ikm.withUnsafeBytes { try derivedArray(ikm: $0, salt: salt, info: info, count: count) }
    }

    private static func derivedKey(ikm: UnsafeRawBufferPointer, salt: [UInt8], info: [UInt8],
                                   count: Int) throws -> SecretBytes {
        try salt.withUnsafeBytes { salt in
            try info.withUnsafeBytes { info in try step(.extractAndExpand, key: ikm, salt: salt, info: info, count: count) }
        }
    }

    private static func derivedArray(ikm: UnsafeRawBufferPointer, salt: [UInt8], info: [UInt8],
                                     count: Int) throws -> [UInt8] {
        try checkCount(count)
        return try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            try salt.withUnsafeBytes { salt in
                try info.withUnsafeBytes { info in
                    try derive(.extractAndExpand, key: ikm, salt: salt, info: info, into: UnsafeMutableRawBufferPointer(buffer))
                }
            }
            initialized = count
        }
    }

    private static func checkCount(_ count: Int) throws {
        guard count >= 1, count <= maximumOutputSize else {
            throw CryptoError.invalidInput("HKDF-SHA256 output must be 1...\(maximumOutputSize) bytes, got \(count)")
        }
    }

    /// RFC 5869's two steps apart, as HPKE (RFC 9180) uses them: extract makes a 32-byte PRK
    /// from `key` (the input keying material) and `salt`; expand makes `count` bytes from `key`
    /// (the PRK) and `info`. Either output lands in locked memory.
    enum Step: String {
        case extractAndExpand = "EXTRACT_AND_EXPAND", extractOnly = "EXTRACT_ONLY", expandOnly = "EXPAND_ONLY"
    }

    static func step(_ step: Step, key: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, info: UnsafeRawBufferPointer,
                     count: Int) throws -> SecretBytes {
        try checkCount(count)
        guard step != .extractOnly || count == hashSize else { throw CryptoError.invalidInput("HKDF-Extract gives \(hashSize) bytes") }
        let output = try SecretBytes(count: count)
        do {
            try output.withUnsafeMutableBytes { try derive(step, key: key, salt: salt, info: info, into: $0) }
        } catch {
            output.wipe()
            throw error
        }
        return output
    }

    /// One `EVP_KDF_derive` call. Every OSSL_PARAM name is kept alive with `withCString` for the whole
    /// call: OSSL_PARAM stores the name pointer, and a Swift String bridged as an argument would
    /// only live until `OSSL_PARAM_construct_*` returns.
    private static func derive(_ step: Step, key ikm: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer,
                               info: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws {
        let kdf = try hkdf.kdf()
        let context = try OpenSSLCall.check(EVP_KDF_CTX_new(kdf), "EVP_KDF_CTX_new")
        defer { EVP_KDF_CTX_free(context) }  // clears its copy of the key
        // A one-byte stand-in keeps OpenSSL from seeing a NULL buffer for an empty input key.
        var empty: UInt8 = 0
        try withUnsafeMutableBytes(of: &empty) { emptyBuffer in
            let ikmBase = ikm.count > 0 ? UnsafeMutableRawPointer(mutating: ikm.baseAddress!) : emptyBuffer.baseAddress!
            try OSSL_KDF_PARAM_DIGEST.withCString { digestName in
            try "SHA256".withCString { digest in
            try OSSL_KDF_PARAM_MODE.withCString { modeName in
            try step.rawValue.withCString { mode in
            try OSSL_KDF_PARAM_KEY.withCString { keyName in
            try OSSL_KDF_PARAM_SALT.withCString { saltName in
            try OSSL_KDF_PARAM_INFO.withCString { infoName in
                var params: [OSSL_PARAM] = [
                    OSSL_PARAM_construct_utf8_string(digestName, UnsafeMutablePointer(mutating: digest), 0),
                    OSSL_PARAM_construct_utf8_string(modeName, UnsafeMutablePointer(mutating: mode), 0),
                    OSSL_PARAM_construct_octet_string(keyName, ikmBase, ikm.count),
                ]
                // Absent, not empty: OpenSSL then uses the RFC's default salt and empty info.
                if salt.count > 0 {
                    params.append(OSSL_PARAM_construct_octet_string(saltName, UnsafeMutableRawPointer(mutating: salt.baseAddress!), salt.count))
                }
                if info.count > 0 {
                    params.append(OSSL_PARAM_construct_octet_string(infoName, UnsafeMutableRawPointer(mutating: info.baseAddress!), info.count))
                }
                params.append(OSSL_PARAM_construct_end())
                try OpenSSLCall.check(
                    EVP_KDF_derive(context, output.baseAddress!.assumingMemoryBound(to: UInt8.self), output.count, &params),
                    "EVP_KDF_derive(HKDF)")
            }
            }
            }
            }
            }
            }
            }
        }
    }
}

/// Fetched once: a fetch looks the name up under a global lock.
private let hkdf = FetchedKDF(name: "HKDF")

/// `@unchecked Sendable` holds because a fetched `EVP_KDF` is immutable and reference counted, and
/// OpenSSL documents fetched algorithm objects as safe to share between threads (each call makes
/// its own `EVP_KDF_CTX`).
private final class FetchedKDF: @unchecked Sendable {
    private let pointer: OpaquePointer?

    init(name: String) { pointer = EVP_KDF_fetch(nil, name, nil) }

    func kdf() throws -> OpaquePointer {
        guard let pointer else { throw CryptoError.library("EVP_KDF_fetch(HKDF)") }
        return pointer
    }
}
