import CLibCrypto

/// AES-256-GCM, the only cipher DotSafe uses for data at rest.
///
/// Sizes are constants of the code, never read from input: OpenSSL would accept a shorter tag or
/// another nonce length if asked, so a corrupted or hostile file must never be able to ask.
/// The wire form is `ciphertext || tag`, so one buffer per chunk suffices.
///
/// Nonces are the caller's job; reusing one under the same key breaks GCM completely. DotSafe
/// derives a fresh key per chunk, so a random 96-bit nonce is safe.
public enum AESGCM {
    public static let keySize = 32
    public static let nonceSize = 12
    public static let tagSize = 16

    /// The key length. DotSafe seals with AES-256 only; AES-128 is here because RFC 9180's
    /// X25519 vectors use it, and HPKE's code is the same for both (`HPKE.AEAD`).
    public enum Strength: Sendable {
        case aes128, aes256
        public var keySize: Int { self == .aes128 ? 16 : 32 }
        fileprivate var cipher: FetchedCipher { self == .aes128 ? aes128GCM : aes256GCM }
    }

    /// Returns ciphertext || tag (tag appended).
    public static func seal(_ plaintext: [UInt8], key: SecretBytes, nonce: [UInt8], aad: [UInt8],
                            strength: Strength = .aes256) throws -> [UInt8] {
        try plaintext.withUnsafeBytes { try sealedArray(plaintext: $0, key: key, nonce: nonce, aad: aad, strength: strength) }
    }

    /// As `seal(_:key:nonce:aad:)`, for plaintext that is a piece of a larger buffer.
    public static func seal(_ plaintext: ArraySlice<UInt8>, key: SecretBytes, nonce: [UInt8], aad: [UInt8]) throws -> [UInt8] {
        try plaintext.withUnsafeBytes { try sealedArray(plaintext: $0, key: key, nonce: nonce, aad: aad) }
    }

    /// Appends ciphertext || tag to `output`, so a block file's header and its sealed payload end
    /// up in one buffer without a second copy of the payload. On failure `output` is unchanged.
    public static func seal(_ plaintext: [UInt8], key: SecretBytes, nonce: [UInt8], aad: [UInt8],
                            appendingTo output: inout [UInt8]) throws {
        try plaintext.withUnsafeBytes { try append(plaintext: [$0], key: key, nonce: nonce, aad: aad, to: &output) }
    }

    /// As `seal(_:key:nonce:aad:appendingTo:)`, for plaintext that is a piece of a larger buffer.
    public static func seal(_ plaintext: ArraySlice<UInt8>, key: SecretBytes, nonce: [UInt8], aad: [UInt8],
                            appendingTo output: inout [UInt8]) throws {
        try plaintext.withUnsafeBytes { try append(plaintext: [$0], key: key, nonce: nonce, aad: aad, to: &output) }
    }

    /// Takes ciphertext || tag. Verifies the tag (EVP_DecryptFinal_ex) before returning anything; on
    /// failure wipes any partial plaintext and throws .authenticationFailed. Input shorter than
    /// tagSize -> authenticationFailed.
    public static func open(_ sealed: [UInt8], key: SecretBytes, nonce: [UInt8], aad: [UInt8],
                            strength: Strength = .aes256) throws -> [UInt8] {
        try sealed.withUnsafeBytes { try openedArray(sealed: $0, key: key, nonce: nonce, aad: aad, strength: strength) }
    }

    /// As `open(_:key:nonce:aad:)`, without copying the sealed bytes out of a larger buffer (a whole
    /// block file read from disk, say).
    public static func open(_ sealed: ArraySlice<UInt8>, key: SecretBytes, nonce: [UInt8], aad: [UInt8]) throws -> [UInt8] {
        try sealed.withUnsafeBytes { try openedArray(sealed: $0, key: key, nonce: nonce, aad: aad) }
    }

    /// Appends ciphertext || tag of `prefix ‖ body ‖ suffix` to `output`, reading `body` where
    /// it lies in the chunk cache's memory: a chunk is sealed without a copy of its plaintext.
    public static func seal(_ prefix: [UInt8], _ body: PlaintextBuffer, _ suffix: [UInt8], key: SecretBytes, nonce: [UInt8],
                            aad: [UInt8], appendingTo output: inout [UInt8]) throws {
        try prefix.withUnsafeBytes { prefix in
            try body.withBytes { body in
                try suffix.withUnsafeBytes { suffix in
                    try append(plaintext: [prefix, body, suffix], key: key, nonce: nonce, aad: aad, to: &output)
                }
            }
        }
    }

    /// Opens ciphertext || tag whose plaintext is `prefixCount` bytes and then a body (at most one
    /// chunk): returns the prefix, and decrypts the body straight into `body`, which then holds
    /// exactly those bytes, so the body never sits in memory outside the cache. On any failure
    /// `body` is left empty and zeroed.
    public static func open(_ sealed: ArraySlice<UInt8>, key: SecretBytes, nonce: [UInt8], aad: [UInt8], prefixCount: Int,
                            into body: PlaintextBuffer) throws -> [UInt8] {
        guard sealed.count >= tagSize + prefixCount else {
            try checkSizes(key: key, nonce: nonce, strength: .aes256)
            throw CryptoError.authenticationFailed
        }
        return try sealed.withUnsafeBytes { sealed in
            try [UInt8](unsafeUninitializedCapacity: prefixCount) { prefix, initialized in
                try body.overwrite(count: sealed.count - tagSize - prefixCount) { bodyBytes in
                    try decrypt(sealed, key: key, nonce: nonce, aad: aad, into: [UnsafeMutableRawBufferPointer(prefix), bodyBytes])
                }
                initialized = prefixCount
            }
        }
    }

    // MARK: - Buffer management

    private static func sealedArray(plaintext: UnsafeRawBufferPointer, key: SecretBytes, nonce: [UInt8],
                                    aad: [UInt8], strength: Strength = .aes256) throws -> [UInt8] {
        let sealedCount = plaintext.count + tagSize
        // Uninitialised capacity: the cipher writes every byte, so zero-filling first would be waste.
        return try [UInt8](unsafeUninitializedCapacity: sealedCount) { buffer, initialized in
            try encrypt([plaintext], key: key, nonce: nonce, aad: aad, into: UnsafeMutableRawBufferPointer(buffer), strength: strength)
            initialized = sealedCount
        }
    }

    /// Builds the result in one new, uninitialised allocation (prefix copied, then sealed in place)
    /// and swaps it in: zero-filling the tail first, the only way to grow an `Array` in place, costs
    /// about a third of the encryption itself on 256 KiB.
    private static func append(plaintext: [UnsafeRawBufferPointer], key: SecretBytes, nonce: [UInt8], aad: [UInt8],
                               to output: inout [UInt8]) throws {
        let start = output.count
        let total = start + plaintext.reduce(0) { $0 + $1.count } + tagSize
        let combined = try output.withUnsafeBytes { prefix in
            try [UInt8](unsafeUninitializedCapacity: total) { buffer, initialized in
                let whole = UnsafeMutableRawBufferPointer(buffer)
                if start > 0 { whole.baseAddress!.copyMemory(from: prefix.baseAddress!, byteCount: start) }
                try encrypt(plaintext, key: key, nonce: nonce, aad: aad,
                            into: UnsafeMutableRawBufferPointer(rebasing: whole[start...]))
                initialized = total
            }
        }
        output = combined
    }

    private static func openedArray(sealed: UnsafeRawBufferPointer, key: SecretBytes, nonce: [UInt8],
                                    aad: [UInt8], strength: Strength = .aes256) throws -> [UInt8] {
        guard sealed.count >= tagSize else {
            try checkSizes(key: key, nonce: nonce, strength: strength)
            throw CryptoError.authenticationFailed
        }
        let plaintextCount = sealed.count - tagSize
        return try [UInt8](unsafeUninitializedCapacity: plaintextCount) { buffer, initialized in
            try decrypt(sealed, key: key, nonce: nonce, aad: aad, into: [UnsafeMutableRawBufferPointer(buffer)], strength: strength)
            initialized = plaintextCount
        }
    }

    // MARK: - OpenSSL

    private static func checkSizes(key: SecretBytes, nonce: [UInt8], strength: Strength) throws {
        guard key.count == strength.keySize else { throw CryptoError.invalidKeySize(expected: strength.keySize, actual: key.count) }
        guard nonce.count == nonceSize else {
            throw CryptoError.invalidInput("AES-GCM nonce must be \(nonceSize) bytes, got \(nonce.count)")
        }
    }

    /// Sets cipher, nonce length and then key and nonce on a fresh context.
    private static func start(_ context: OpaquePointer, encrypting: Bool, key: SecretBytes, nonce: [UInt8],
                              strength: Strength) throws {
        let cipher = try strength.cipher.cipher()
        let mode: Int32 = encrypting ? 1 : 0
        try OpenSSLCall.check(EVP_CipherInit_ex(context, cipher, nil, nil, nil, mode), "EVP_CipherInit_ex")
        try OpenSSLCall.check(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceSize), nil),
                              "EVP_CIPHER_CTX_ctrl(EVP_CTRL_GCM_SET_IVLEN)")
        try key.withUnsafeBytes { key in
            try nonce.withUnsafeBytes { nonce in
                try OpenSSLCall.check(
                    EVP_CipherInit_ex(context, nil, nil, key.bindMemory(to: UInt8.self).baseAddress,
                                      nonce.bindMemory(to: UInt8.self).baseAddress, mode),
                    "EVP_CipherInit_ex")
            }
        }
    }

    private static func authenticate(_ context: OpaquePointer, aad: [UInt8]) throws {
        guard !aad.isEmpty else { return }
        try aad.withUnsafeBytes { try update(context, input: $0, output: nil) }
    }

    /// Feeds `input` through the cipher (or, with no output, as associated data) in pieces that fit
    /// OpenSSL's `int` lengths.
    private static func update(_ context: OpaquePointer, input: UnsafeRawBufferPointer,
                               output: UnsafeMutableRawPointer?) throws {
        guard let base = input.baseAddress, input.count > 0 else { return }
        let maxStep = 1 << 30
        var done = 0
        while done < input.count {
            let step = min(input.count - done, maxStep)
            var written: Int32 = 0
            let out = output.map { ($0 + done).assumingMemoryBound(to: UInt8.self) }
            try OpenSSLCall.check(
                EVP_CipherUpdate(context, out, &written, (base + done).assumingMemoryBound(to: UInt8.self), Int32(step)),
                "EVP_CipherUpdate")
            guard Int(written) == step else { throw OpenSSLCall.failure("EVP_CipherUpdate") }
            done += step
        }
    }

    /// Encrypts the pieces of `plaintext` one after the other, as one message, into `sealed`.
    private static func encrypt(_ plaintext: [UnsafeRawBufferPointer], key: SecretBytes, nonce: [UInt8], aad: [UInt8],
                                into sealed: UnsafeMutableRawBufferPointer, strength: Strength = .aes256) throws {
        try checkSizes(key: key, nonce: nonce, strength: strength)
        let plaintextCount = plaintext.reduce(0) { $0 + $1.count }
        precondition(sealed.count == plaintextCount + tagSize)
        let context = try OpenSSLCall.check(EVP_CIPHER_CTX_new(), "EVP_CIPHER_CTX_new")
        defer { EVP_CIPHER_CTX_free(context) }  // the provider clears its key schedule on free
        try start(context, encrypting: true, key: key, nonce: nonce, strength: strength)
        try authenticate(context, aad: aad)
        var done = 0
        for piece in plaintext {
            try update(context, input: piece, output: sealed.baseAddress! + done)
            done += piece.count
        }
        let tag = sealed.baseAddress! + plaintextCount
        var finalCount: Int32 = 0
        try OpenSSLCall.check(EVP_EncryptFinal_ex(context, tag.assumingMemoryBound(to: UInt8.self), &finalCount),
                              "EVP_EncryptFinal_ex")
        guard finalCount == 0 else { throw OpenSSLCall.failure("EVP_EncryptFinal_ex") }
        try OpenSSLCall.check(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagSize), tag),
                              "EVP_CIPHER_CTX_ctrl(EVP_CTRL_GCM_GET_TAG)")
    }

    /// Decrypts into the pieces of `plaintext`, one after the other, and verifies the tag; on any
    /// failure every piece is zeroed first.
    private static func decrypt(_ sealed: UnsafeRawBufferPointer, key: SecretBytes, nonce: [UInt8], aad: [UInt8],
                                into plaintext: [UnsafeMutableRawBufferPointer], strength: Strength = .aes256) throws {
        try checkSizes(key: key, nonce: nonce, strength: strength)
        let plaintextCount = plaintext.reduce(0) { $0 + $1.count }
        precondition(sealed.count == plaintextCount + tagSize)
        let context = try OpenSSLCall.check(EVP_CIPHER_CTX_new(), "EVP_CIPHER_CTX_new")
        defer { EVP_CIPHER_CTX_free(context) }
        do {
            try start(context, encrypting: false, key: key, nonce: nonce, strength: strength)
            try authenticate(context, aad: aad)
            var done = 0
            for piece in plaintext {
                try update(context, input: UnsafeRawBufferPointer(rebasing: sealed[done..<done + piece.count]),
                           output: piece.baseAddress)
                done += piece.count
            }
            // OpenSSL copies the expected tag; the cast only satisfies ctrl's `void *`.
            let tag = UnsafeMutableRawPointer(mutating: sealed.baseAddress! + plaintextCount)
            try OpenSSLCall.check(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagSize), tag),
                                  "EVP_CIPHER_CTX_ctrl(EVP_CTRL_GCM_SET_TAG)")
            var finalCount: Int32 = 0
            let verified = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { scratch in
                EVP_DecryptFinal_ex(context, scratch.baseAddress, &finalCount)
            }
            guard verified == 1, finalCount == 0 else {
                ERR_clear_error()
                throw CryptoError.authenticationFailed
            }
        } catch {
            for piece in plaintext { SecureZero.wipe(piece) }
            throw error
        }
    }
}

/// The AES-256-GCM implementation, fetched from the default provider once: an implicit fetch
/// on every `EVP_CipherInit_ex` costs a name lookup under a lock per chunk.
private let aes256GCM = FetchedCipher(name: "AES-256-GCM")
private let aes128GCM = FetchedCipher(name: "AES-128-GCM")

/// `@unchecked Sendable` holds because a fetched `EVP_CIPHER` is immutable and reference counted,
/// and OpenSSL documents fetched algorithm objects as safe to share between threads.
private final class FetchedCipher: @unchecked Sendable {
    private let pointer: OpaquePointer?

    init(name: String) { pointer = EVP_CIPHER_fetch(nil, name, nil) }

    func cipher() throws -> OpaquePointer {
        guard let pointer else { throw CryptoError.library("EVP_CIPHER_fetch") }
        return pointer
    }
}
