import VaultCrypto
import VaultFormat

/// SEAL and OPEN of docs/FORMAT.md §2.3: a one-time subkey per seal from the first half of a
/// 24-byte nonce, AES-256-GCM with the second half. Every encryption in DotSafe goes through here.
enum Sealer {
    enum Key {
        case secret(SecretBytes)
        case arena(SecretArena.Slot, SecretArena)
    }

    /// The nonce and one-time subkey of one seal. Drawn under the vault's lock (the item keys
    /// live in its arena), so that the AES work can run outside it (write-behind).
    struct OneTimeKey: Sendable {
        let nonce: [UInt8]
        let subkey: SecretBytes

        init(_ key: Key, random: any RandomSource) throws {
            try self.init(key, nonce: try random.bytes(Format.sealNonceSize))
        }

        /// The key of an existing seal, for opening it.
        init(_ key: Key, nonce: [UInt8]) throws {
            guard nonce.count == Format.sealNonceSize else { throw CryptoError.authenticationFailed }
            self.nonce = nonce
            subkey = try derive(key, nonce)
        }

        /// ciphertext || tag; the caller wipes `subkey` when done.
        func seal(_ plaintext: ArraySlice<UInt8>, _ seal: SealContext) throws -> [UInt8] {
            try AESGCM.seal(plaintext, key: subkey, nonce: Array(nonce[12...]), aad: seal.associatedData)
        }

        func open(_ sealed: ArraySlice<UInt8>, _ seal: SealContext) throws -> [UInt8] {
            try AESGCM.open(sealed, key: subkey, nonce: Array(nonce[12...]), aad: seal.associatedData)
        }
    }

    /// Returns ciphertext || tag for `plaintext` under a fresh random nonce, and that nonce.
    static func seal(_ plaintext: ArraySlice<UInt8>, key: Key, seal: SealContext,
                     random: any RandomSource) throws -> (nonce: [UInt8], sealed: [UInt8]) {
        let oneTime = try OneTimeKey(key, random: random)
        defer { oneTime.subkey.wipe() }
        return (oneTime.nonce, try oneTime.seal(plaintext, seal))
    }

    /// Opens ciphertext || tag sealed under `nonce`; any mismatch is `authenticationFailed`.
    static func open(_ sealed: ArraySlice<UInt8>, nonce: [UInt8], key: Key, seal: SealContext) throws -> [UInt8] {
        let oneTime = try OneTimeKey(key, nonce: nonce)
        defer { oneTime.subkey.wipe() }
        return try oneTime.open(sealed, seal)
    }

    /// `seal` and `open` with label and context given apart (the keyring export's callers).
    static func seal(_ plaintext: ArraySlice<UInt8>, key: Key, label: [UInt8], context: [UInt8],
                     random: any RandomSource) throws -> (nonce: [UInt8], sealed: [UInt8]) {
        try seal(plaintext, key: key, seal: SealContext(label: label, context: context), random: random)
    }

    static func open(_ sealed: ArraySlice<UInt8>, nonce: [UInt8], key: Key, label: [UInt8], context: [UInt8]) throws -> [UInt8] {
        try open(sealed, nonce: nonce, key: key, seal: SealContext(label: label, context: context))
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
    static func sealEnvelope(kind: InnerBlock.Kind, version: UInt8 = Format.version, body: ArraySlice<UInt8>, key: Key,
                             seal: SealContext, random: any RandomSource) throws -> (nonce: [UInt8], file: [UInt8]) {
        let padding = try random.bytes(Format.payloadSize - body.count)
        let oneTime = try OneTimeKey(key, random: random)
        defer { oneTime.subkey.wipe() }
        return (oneTime.nonce, try sealEnvelope(kind: kind, version: version, body: body, padding: padding, with: oneTime, seal: seal))
    }

    /// The same with padding and key drawn beforehand (under the vault's lock); runs anywhere.
    static func sealEnvelope(kind: InnerBlock.Kind, version: UInt8 = Format.version, body: ArraySlice<UInt8>, padding: [UInt8],
                             with oneTime: OneTimeKey, seal: SealContext) throws -> [UInt8] {
        var inner = InnerBlock.encode(kind: kind, version: version, body: body, padding: { _ in padding })
        defer { wipe(&inner) }
        var file = oneTime.nonce
        try AESGCM.seal(inner, key: oneTime.subkey, nonce: Array(oneTime.nonce[12...]), aad: seal.associatedData, appendingTo: &file)
        return file
    }

    /// Opens a storage file. When `expectedNonce` is given (the index recorded it), a file with
    /// another nonce is refused: it is an older or a foreign version.
    static func openEnvelope(_ file: [UInt8], expectedNonce: [UInt8]?, kind: InnerBlock.Kind, version: UInt8 = Format.version,
                             key: Key, seal: SealContext) throws -> [UInt8] {
        guard file.count == Format.fileSize else { throw CryptoError.authenticationFailed }
        let oneTime = try OneTimeKey(key, nonce: Array(file[0..<Format.sealNonceSize]))
        defer { oneTime.subkey.wipe() }
        return try openEnvelope(file, expectedNonce: expectedNonce, kind: kind, version: version, with: oneTime, seal: seal)
    }

    /// The same with the key taken beforehand (under the vault's lock, from the recorded nonce).
    static func openEnvelope(_ file: [UInt8], expectedNonce: [UInt8]?, kind: InnerBlock.Kind, version: UInt8 = Format.version,
                             with oneTime: OneTimeKey, seal: SealContext) throws -> [UInt8] {
        guard file.count == Format.fileSize, Array(file[0..<Format.sealNonceSize]) == oneTime.nonce else {
            throw CryptoError.authenticationFailed
        }
        if let expectedNonce, oneTime.nonce != expectedNonce { throw CryptoError.authenticationFailed }
        let inner = try oneTime.open(file[Format.ciphertextOffset...], seal)
        return Array(try InnerBlock.decode(inner, expecting: kind, version: version))
    }

    static func wipe(_ bytes: inout [UInt8]) { bytes.wipe() }
}
