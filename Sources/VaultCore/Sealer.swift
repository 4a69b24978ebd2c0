import VaultCrypto
import VaultFormat

/// SEAL and OPEN of docs/FORMAT.md §2.3: a one-time subkey per seal from the first half of a
/// 24-byte nonce, AES-256-GCM with the second half. Every encryption in DotSafe goes through here.
enum Sealer {
    enum Key {
        case secret(SecretBytes)
        case arena(SecretArena.Slot, SecretArena)
    }

    /// Returns ciphertext || tag for `plaintext` under a fresh random nonce, and that nonce.
    static func seal(_ plaintext: ArraySlice<UInt8>, key: Key, label: [UInt8], context: [UInt8],
                     random: any RandomSource) throws -> (nonce: [UInt8], sealed: [UInt8]) {
        let nonce = try random.bytes(Format.sealNonceSize)
        let subkey = try derive(key, nonce)
        defer { subkey.wipe() }
        let sealed = try AESGCM.seal(plaintext, key: subkey, nonce: Array(nonce[12...]), aad: label + context)
        return (nonce, sealed)
    }

    /// Opens ciphertext || tag sealed under `nonce`; any mismatch is `authenticationFailed`.
    static func open(_ sealed: ArraySlice<UInt8>, nonce: [UInt8], key: Key, label: [UInt8], context: [UInt8]) throws -> [UInt8] {
        guard nonce.count == Format.sealNonceSize else { throw CryptoError.authenticationFailed }
        let subkey = try derive(key, nonce)
        defer { subkey.wipe() }
        return try AESGCM.open(sealed, key: subkey, nonce: Array(nonce[12...]), aad: label + context)
    }

    private static func derive(_ key: Key, _ nonce: [UInt8]) throws -> SecretBytes {
        let info = Label.subkey + nonce[0..<12]
        switch key {
        case .secret(let secret): return try HKDF.deriveKey(from: secret, salt: [], info: info, count: Format.keySize)
        case .arena(let slot, let arena): return try HKDF.deriveKey(from: slot, in: arena, salt: [], info: info, count: Format.keySize)
        }
    }

    // MARK: Envelopes (§4)

    /// A whole storage file: nonce, then the sealed inner block.
    static func sealEnvelope(kind: InnerBlock.Kind, body: ArraySlice<UInt8>, key: Key, label: [UInt8], context: [UInt8],
                             random: any RandomSource) throws -> (nonce: [UInt8], file: [UInt8]) {
        var inner = try InnerBlock.encode(kind: kind, body: body, padding: { try random.bytes($0) })
        defer { wipe(&inner) }
        let (nonce, sealed) = try seal(inner[...], key: key, label: label, context: context, random: random)
        return (nonce, nonce + sealed)
    }

    /// Opens a storage file. When `expectedNonce` is given (the index recorded it), a file with
    /// another nonce is refused: it is an older or a foreign version.
    static func openEnvelope(_ file: [UInt8], expectedNonce: [UInt8]?, kind: InnerBlock.Kind, key: Key,
                             label: [UInt8], context: [UInt8]) throws -> [UInt8] {
        guard file.count == Format.fileSize else { throw CryptoError.authenticationFailed }
        let nonce = Array(file[0..<Format.sealNonceSize])
        if let expectedNonce, nonce != expectedNonce { throw CryptoError.authenticationFailed }
        let inner = try open(file[Format.ciphertextOffset...], nonce: nonce, key: key, label: label, context: context)
        return Array(try InnerBlock.decode(inner, expecting: kind))
    }

    static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { raw in
            for i in raw.indices { raw[i] = 0 }
        }
    }
}
