import VaultCrypto
import VaultFormat

/// `Sealer`'s envelopes (§4) for a chunk whose plaintext lives in the chunk cache's memory
/// (`PlaintextBuffer`): sealed from it and opened into it, with no copy of the chunk in ordinary
/// memory. The same bytes as `sealEnvelope(...padding:with:seal:)` and `openEnvelope(...with:seal:)`
/// (SealerBufferTests checks both ways).
extension Sealer {
    /// A whole storage file from a body in the cache, with padding and key drawn beforehand.
    static func sealEnvelope(kind: InnerBlock.Kind, version: UInt8 = Format.version, body: PlaintextBuffer, padding: [UInt8],
                             with oneTime: OneTimeKey, seal: SealContext) throws -> [UInt8] {
        precondition(body.count + padding.count == Format.payloadSize, "an inner block is one payload")
        var file = oneTime.nonce
        try AESGCM.seal(InnerBlock.header(kind: kind, version: version, length: body.count), body, padding, key: oneTime.subkey,
                        nonce: Array(oneTime.nonce[12...]), aad: seal.associatedData, appendingTo: &file)
        return file
    }

    /// Opens a storage file into `body` (a buffer of the cache's pool): after it, `body` holds
    /// the inner block's body and zeros past it; on any failure, nothing.
    static func openEnvelope(_ file: ArraySlice<UInt8>, expectedNonce: [UInt8]?, kind: InnerBlock.Kind, version: UInt8 = Format.version,
                             with oneTime: OneTimeKey, seal: SealContext, into body: PlaintextBuffer) throws {
        guard file.count == Format.fileSize, file.prefix(Format.sealNonceSize).elementsEqual(oneTime.nonce) else {
            throw CryptoError.authenticationFailed
        }
        if let expectedNonce, oneTime.nonce != expectedNonce { throw CryptoError.authenticationFailed }
        let header = try AESGCM.open(file.dropFirst(Format.ciphertextOffset), key: oneTime.subkey, nonce: Array(oneTime.nonce[12...]),
                                     aad: seal.associatedData, prefixCount: Format.innerHeaderSize, into: body)
        do {
            body.truncate(to: try InnerBlock.bodyLength(header: header[...], expecting: kind, version: version))
        } catch {
            body.truncate(to: 0)
            throw error
        }
    }

    /// `open(_:nonce:key:seal:)` into a buffer of the cache's pool (a pack member): afterwards
    /// `body` holds exactly the plaintext; on any failure, nothing.
    static func open(_ sealed: ArraySlice<UInt8>, nonce: [UInt8], key: Key, seal: SealContext, into body: PlaintextBuffer) throws {
        let oneTime = try OneTimeKey(key, nonce: nonce)
        defer { oneTime.subkey.wipe() }
        _ = try AESGCM.open(sealed, key: oneTime.subkey, nonce: Array(oneTime.nonce[12...]), aad: seal.associatedData,
                            prefixCount: 0, into: body)
    }
}
