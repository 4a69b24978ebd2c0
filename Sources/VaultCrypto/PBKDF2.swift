import CLibCrypto

/// PBKDF2-HMAC-SHA256 (PKCS #5 v2.1, via `PKCS5_PBKDF2_HMAC`): turns the user's password into the
/// key that unlocks the vault's key hierarchy. The round count comes from the vault header and is
/// chosen by the format layer (≈600,000 takes 0.3 s here); any count from 1 is accepted so that
/// published vectors can be checked.
public enum PBKDF2 {
    /// The derived key goes straight into locked memory. The caller wipes `password`.
    public static func deriveKey(password: [UInt8], salt: [UInt8], rounds: Int, count: Int) throws -> SecretBytes {
        try password.withUnsafeBytes { try deriveKey(password: $0, salt: salt, rounds: rounds, count: count) }
    }

    /// The same from a password in locked memory (a pattern's canonical bytes).
    public static func deriveKey(password: SecretBytes, salt: [UInt8], rounds: Int, count: Int) throws -> SecretBytes {
        try password.withUnsafeBytes { try deriveKey(password: $0, salt: salt, rounds: rounds, count: count) }
    }

    private static func deriveKey(password: UnsafeRawBufferPointer, salt: [UInt8], rounds: Int, count: Int) throws -> SecretBytes {
        guard rounds >= 1, rounds <= Int(Int32.max) else {
            throw CryptoError.invalidInput("PBKDF2 rounds must be 1...\(Int32.max), got \(rounds)")
        }
        guard count >= 1, count <= Int(Int32.max) else {
            throw CryptoError.invalidInput("PBKDF2 output size must be positive, got \(count)")
        }
        let passwordLength = try OpenSSLCall.int32(password.count, "PBKDF2 password")
        let saltLength = try OpenSSLCall.int32(salt.count, "PBKDF2 salt")
        let digest = try OpenSSLCall.check(EVP_sha256(), "EVP_sha256")
        let key = try SecretBytes(count: count)
        // A one-byte stand-in keeps OpenSSL from seeing a NULL buffer for an empty password or salt.
        let stand: [UInt8] = [0]
        let ok = salt.withUnsafeBufferPointer { salt in
            stand.withUnsafeBufferPointer { stand in
                key.withUnsafeMutableBytes { out in
                    let passwordBase = password.count > 0 ? password.baseAddress! : UnsafeRawPointer(stand.baseAddress!)
                    return PKCS5_PBKDF2_HMAC(passwordBase.assumingMemoryBound(to: CChar.self), passwordLength,
                                             salt.count > 0 ? salt.baseAddress! : stand.baseAddress!, saltLength,
                                             Int32(rounds), digest, Int32(count),
                                             out.bindMemory(to: UInt8.self).baseAddress)
                }
            }
        }
        guard ok == 1 else {
            key.wipe()
            throw OpenSSLCall.failure("PKCS5_PBKDF2_HMAC")
        }
        return key
    }
}
