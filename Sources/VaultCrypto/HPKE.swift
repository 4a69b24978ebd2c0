/// Hybrid Public Key Encryption (RFC 9180) with DHKEM(X25519, HKDF-SHA256) and HKDF-SHA256, in
/// the Base and Auth modes, generic over the AEAD (AES-128-GCM for the RFC's vectors, AES-256-GCM
/// for grants, docs/FORMAT.md §14.2).
///
/// OpenSSL 3.0 (Debian 12) has no HPKE API, so this is RFC 9180's own pseudocode over OpenSSL's
/// X25519, HKDF (extract-only and expand-only) and AES-GCM: no primitive of our own. Every
/// intermediate secret (DH outputs, PRKs, the KEM shared secret, keys) lives in `SecretBytes`.
public enum HPKE {
    public enum Mode: UInt8, Sendable {
        case base = 0x00
        case auth = 0x02
    }

    /// The AEAD of the suite (RFC 9180 §7.3), by its identifier.
    public enum AEAD: UInt16, Sendable {
        case aes128GCM = 0x0001
        case aes256GCM = 0x0002

        var strength: AESGCM.Strength { self == .aes128GCM ? .aes128 : .aes256 }
        var keySize: Int { strength.keySize }
    }

    /// DHKEM(X25519, HKDF-SHA256) and HKDF-SHA256 (RFC 9180 §7.1, §7.2).
    static let kemID: UInt16 = 0x0020
    static let kdfID: UInt16 = 0x0001
    /// Nsecret, Nenc, Npk, Nsk and Nh are all 32 for this KEM and KDF; Nn is 12 for both AEADs.
    static let secretSize = 32
    static let nonceSize = AESGCM.nonceSize
    static let kemSuiteID = Array("KEM".utf8) + bigEndian(kemID)

    static func suiteID(_ aead: AEAD) -> [UInt8] {
        Array("HPKE".utf8) + bigEndian(kemID) + bigEndian(kdfID) + bigEndian(aead.rawValue)
    }

    // MARK: - Setup (RFC 9180 §5.1)

    /// SetupBaseS: encrypts to `recipient`'s public key; `ephemeral` is the fresh key pair of
    /// this encapsulation (a new `X25519.PrivateKey()` each time, never reused).
    public static func setupBaseSender(recipient: [UInt8], info: [UInt8], aead: AEAD,
                                       ephemeral: X25519.PrivateKey) throws -> (enc: [UInt8], context: Context) {
        let (sharedSecret, enc) = try encapsulate(recipient: recipient, sender: nil, ephemeral: ephemeral)
        defer { sharedSecret.wipe() }
        return (enc, try keySchedule(mode: .base, sharedSecret: sharedSecret, info: info, aead: aead).context)
    }

    /// SetupAuthS: as Base, and the recipient learns that the holder of `sender` made it.
    public static func setupAuthSender(recipient: [UInt8], info: [UInt8], aead: AEAD, sender: X25519.PrivateKey,
                                       ephemeral: X25519.PrivateKey) throws -> (enc: [UInt8], context: Context) {
        let (sharedSecret, enc) = try encapsulate(recipient: recipient, sender: sender, ephemeral: ephemeral)
        defer { sharedSecret.wipe() }
        return (enc, try keySchedule(mode: .auth, sharedSecret: sharedSecret, info: info, aead: aead).context)
    }

    /// SetupBaseR.
    public static func setupBaseRecipient(enc: [UInt8], recipient: X25519.PrivateKey, info: [UInt8],
                                          aead: AEAD) throws -> Context {
        let sharedSecret = try decapsulate(enc: enc, recipient: recipient, sender: nil)
        defer { sharedSecret.wipe() }
        return try keySchedule(mode: .base, sharedSecret: sharedSecret, info: info, aead: aead).context
    }

    /// SetupAuthR: succeeds only for an `enc` made with the private key of `sender`'s public key
    /// (or with the recipient's own, RFC 9180 §9.1.1); otherwise the context opens nothing.
    public static func setupAuthRecipient(enc: [UInt8], recipient: X25519.PrivateKey, info: [UInt8], aead: AEAD,
                                          sender: [UInt8]) throws -> Context {
        let sharedSecret = try decapsulate(enc: enc, recipient: recipient, sender: sender)
        defer { sharedSecret.wipe() }
        return try keySchedule(mode: .auth, sharedSecret: sharedSecret, info: info, aead: aead).context
    }

    /// DeriveKeyPair (RFC 9180 §7.1.3) for X25519: the key pair that `ikm` determines.
    public static func deriveKeyPair(ikm: [UInt8]) throws -> X25519.PrivateKey {
        let prk = try ikm.withUnsafeBytes { try labeledExtract(suite: kemSuiteID, salt: [], label: "dkp_prk", ikm: $0) }
        defer { prk.wipe() }
        return try X25519.PrivateKey(scalar: labeledExpand(suite: kemSuiteID, prk: prk, label: "sk", info: [], count: secretSize))
    }

    // MARK: - DHKEM (RFC 9180 §4.1)

    static func encapsulate(recipient: [UInt8], sender: X25519.PrivateKey?,
                            ephemeral: X25519.PrivateKey) throws -> (sharedSecret: SecretBytes, enc: [UInt8]) {
        var secrets = [try ephemeral.sharedSecret(with: recipient)]
        defer { secrets.forEach { $0.wipe() } }
        if let sender { secrets.append(try sender.sharedSecret(with: recipient)) }
        let enc = ephemeral.publicKey
        let kemContext = enc + recipient + (sender?.publicKey ?? [])
        return (try extractAndExpand(dh: secrets, kemContext: kemContext), enc)
    }

    static func decapsulate(enc: [UInt8], recipient: X25519.PrivateKey, sender: [UInt8]?) throws -> SecretBytes {
        var secrets = [try recipient.sharedSecret(with: enc)]
        defer { secrets.forEach { $0.wipe() } }
        if let sender { secrets.append(try recipient.sharedSecret(with: sender)) }
        return try extractAndExpand(dh: secrets, kemContext: enc + recipient.publicKey + (sender ?? []))
    }

    /// `dh` is the concatenation of the parts, assembled in locked memory.
    static func extractAndExpand(dh parts: [SecretBytes], kemContext: [UInt8]) throws -> SecretBytes {
        let dh = try SecretBytes(count: parts.reduce(0) { $0 + $1.count })
        defer { dh.wipe() }
        dh.withUnsafeMutableBytes { out in
            var offset = 0
            for part in parts {
                part.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[offset ..< offset + $0.count]).copyMemory(from: $0) }
                offset += part.count
            }
        }
        let prk = try dh.withUnsafeBytes { try labeledExtract(suite: kemSuiteID, salt: [], label: "eae_prk", ikm: $0) }
        defer { prk.wipe() }
        return try labeledExpand(suite: kemSuiteID, prk: prk, label: "shared_secret", info: kemContext, count: secretSize)
    }

    // MARK: - Key schedule (RFC 9180 §5.1)

    /// The context and the values RFC 9180's vectors list on the way to it.
    struct Schedule {
        var keyScheduleContext: [UInt8]
        var secret: SecretBytes
        var context: Context
    }

    static func keySchedule(mode: Mode, sharedSecret: SecretBytes, info: [UInt8], aead: AEAD) throws -> Schedule {
        let suite = suiteID(aead)
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        // No PSK in either mode: psk and psk_id are empty.
        let pskIDHash = try labeledExtract(suite: suite, salt: [], label: "psk_id_hash", ikm: none).copyBytes()
        let infoHash = try info.withUnsafeBytes { try labeledExtract(suite: suite, salt: [], label: "info_hash", ikm: $0) }.copyBytes()
        let keyScheduleContext = [mode.rawValue] + pskIDHash + infoHash
        let secret = try sharedSecret.withUnsafeBytes { salt in
            try labeledExtract(suite: suite, salt: salt, label: "secret", ikm: none)
        }
        let key = try labeledExpand(suite: suite, prk: secret, label: "key", info: keyScheduleContext, count: aead.keySize)
        let baseNonce = try labeledExpand(suite: suite, prk: secret, label: "base_nonce", info: keyScheduleContext,
                                          count: nonceSize).copyBytes()
        let exporterSecret = try labeledExpand(suite: suite, prk: secret, label: "exp", info: keyScheduleContext, count: secretSize)
        return Schedule(keyScheduleContext: keyScheduleContext, secret: secret,
                        context: Context(aead: aead, key: key, baseNonce: baseNonce, exporterSecret: exporterSecret))
    }

    // MARK: - Labeled KDF (RFC 9180 §4)

    static let versionLabel = Array("HPKE-v1".utf8)

    static func labeledExtract(suite: [UInt8], salt: [UInt8], label: String, ikm: UnsafeRawBufferPointer) throws -> SecretBytes {
        try salt.withUnsafeBytes { try labeledExtract(suite: suite, salt: $0, label: label, ikm: ikm) }
    }

    /// Extract(salt, "HPKE-v1" || suite_id || label || ikm), the labeled input built in locked memory.
    static func labeledExtract(suite: [UInt8], salt: UnsafeRawBufferPointer, label: String,
                               ikm: UnsafeRawBufferPointer) throws -> SecretBytes {
        let prefix = versionLabel + suite + Array(label.utf8)
        let labeled = try SecretBytes(count: prefix.count + ikm.count)
        defer { labeled.wipe() }
        labeled.withUnsafeMutableBytes { out in
            out.copyBytes(from: prefix)
            if ikm.count > 0 { UnsafeMutableRawBufferPointer(rebasing: out[prefix.count...]).copyMemory(from: ikm) }
        }
        return try labeled.withUnsafeBytes {
            try HKDF.step(.extractOnly, key: $0, salt: salt, info: UnsafeRawBufferPointer(start: nil, count: 0), count: HKDF.hashSize)
        }
    }

    /// Expand(prk, I2OSP(L, 2) || "HPKE-v1" || suite_id || label || info, L).
    static func labeledExpand(suite: [UInt8], prk: SecretBytes, label: String, info: [UInt8], count: Int) throws -> SecretBytes {
        guard count <= Int(UInt16.max) else { throw CryptoError.invalidInput("HPKE output of \(count) bytes") }
        let labeledInfo = bigEndian(UInt16(count)) + versionLabel + suite + Array(label.utf8) + info
        let noSalt = UnsafeRawBufferPointer(start: nil, count: 0)
        return try prk.withUnsafeBytes { prk in
            try labeledInfo.withUnsafeBytes { try HKDF.step(.expandOnly, key: prk, salt: noSalt, info: $0, count: count) }
        }
    }

    static func bigEndian(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xff)] }
}
