import VaultCrypto
import VaultFormat

/// Sealing and opening grants (docs/FORMAT.md §14.3, §14.4): HPKE Auth mode from the sharing
/// vault's identity to the recipient's, AES-256-GCM, a key commitment exported from the context,
/// and `enc` masked with a key only the two vaults can derive. The layout is `GrantFile`'s.
public enum GrantSeal {
    /// Why a grant could not be made or opened; the description is the line users see.
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// The peer's contact code is this vault's own.
        case ownCode
        /// The peer's key is a low-order point: nothing can be agreed with it.
        case unusableCode
        /// Wrong recipient, wrong sender, tampered or another key: deliberately one case.
        case doesNotOpen
        /// It opened, but what it holds breaks the format (§14.4); the text names the rule.
        case damaged(String)

        public var description: String {
            switch self {
            case .ownCode: "that contact code is this vault's own; give the other person's code"
            case .unusableCode: "that contact code is not a usable key"
            case .doesNotOpen: "the grant does not open: it was not made by that contact code for this vault, or it was changed"
            case .damaged(let what): "the grant is damaged: \(what)"
            }
        }
    }

    static let aead = HPKE.AEAD.aes256GCM

    /// Z = X25519(own identity, peer): the secret both vaults, and only they, can derive.
    public static func pairSecret(identity: X25519.PrivateKey, peer: [UInt8]) throws -> SecretBytes {
        guard peer != identity.publicKey else { throw Failure.ownCode }
        do {
            return try identity.sharedSecret(with: peer)
        } catch CryptoError.weakSharedSecret {
            throw Failure.unusableCode
        }
    }

    /// The grant's storage name at `location`, for the sharer (`identity` is the sender's).
    public static func name(sharing identity: X25519.PrivateKey, with recipient: [UInt8], location: [UInt8]) throws -> String {
        FileName.encode(try nameBytes(sharing: identity, with: recipient, location: location))
    }

    /// The 16 bytes of that name, as the sharer's root lists them (§13.5).
    public static func nameBytes(sharing identity: X25519.PrivateKey, with recipient: [UInt8], location: [UInt8]) throws -> [UInt8] {
        let secret = try pairSecret(identity: identity, peer: recipient)
        defer { secret.wipe() }
        return try HKDF.deriveBytes(from: secret, salt: [],
                                    info: GrantFile.nameInfo(sender: identity.publicKey, recipient: recipient, location: location),
                                    count: Format.nameBytes)
    }

    /// The grant's storage name at `location`, for the recipient (`identity` is the recipient's).
    public static func name(receiving identity: X25519.PrivateKey, from sender: [UInt8], location: [UInt8]) throws -> String {
        let secret = try pairSecret(identity: identity, peer: sender)
        defer { secret.wipe() }
        return try name(pairSecret: secret, sender: sender, recipient: identity.publicKey, location: location)
    }

    static func name(pairSecret: SecretBytes, sender: [UInt8], recipient: [UInt8], location: [UInt8]) throws -> String {
        FileName.encode(try HKDF.deriveBytes(from: pairSecret, salt: [],
                                             info: GrantFile.nameInfo(sender: sender, recipient: recipient, location: location),
                                             count: Format.nameBytes))
    }

    /// An F-byte grant of `record` (role 2, or 3 for an ended grant) from `sender` to `recipient`. `random` gives, in this
    /// order, the salt G, the ephemeral scalar and the padding.
    public static func seal(_ record: UnlockRecord, from sender: X25519.PrivateKey, to recipient: [UInt8],
                            random: any RandomSource = SystemRandom()) throws -> [UInt8] {
        precondition(record.role != .owner && record.identityKey.isEmpty, "a grant holds VK, RL and its file, never an identity")
        let secret = try pairSecret(identity: sender, peer: recipient)
        defer { secret.wipe() }
        let salt = try random.bytes(GrantFile.saltSize)
        let ephemeral = try X25519.PrivateKey(using: random)
        let (enc, context) = try HPKE.setupAuthSender(recipient: recipient, info: Label.grantInfo, aead: aead, sender: sender,
                                                      ephemeral: ephemeral)
        defer { context.wipe() }
        let mask = try maskValue(pairSecret: secret, sender: sender.publicKey, recipient: recipient, salt: salt)
        let commitment = try context.export(context: Label.grantCommitment, count: GrantFile.commitmentSize).copyBytes()
        let header = salt + zip(enc, mask).map { $0 ^ $1 } + commitment
        var body = record.encode()
        var block = GrantFile.block(body: body)
        defer { body.wipe(); block.wipe() }
        let sealed = try context.seal(aad: header, plaintext: block)
        return header + sealed + (try random.bytes(GrantFile.paddingSize))
    }

    /// The role-2 record in `file`, if it is a grant from `sender` to `recipient`.
    public static func open(_ file: [UInt8], recipient: X25519.PrivateKey, sender: [UInt8]) throws -> UnlockRecord {
        guard file.count == Format.fileSize else { throw Failure.damaged("a grant file has \(Format.fileSize) bytes, not \(file.count)") }
        let secret = try pairSecret(identity: recipient, peer: sender)
        defer { secret.wipe() }
        let header = Array(file[..<GrantFile.headerSize])
        let salt = Array(header[..<GrantFile.saltSize])
        let mask = try maskValue(pairSecret: secret, sender: sender, recipient: recipient.publicKey, salt: salt)
        let enc = zip(header[GrantFile.encOffset ..< GrantFile.commitmentOffset], mask).map { $0 ^ $1 }
        var block: [UInt8]
        do {
            let context = try HPKE.setupAuthRecipient(enc: enc, recipient: recipient, info: Label.grantInfo, aead: aead, sender: sender)
            defer { context.wipe() }
            let commitment = try context.export(context: Label.grantCommitment, count: GrantFile.commitmentSize).copyBytes()
            // The commitment first: a block that opened under another key must not be decrypted at all.
            guard ConstantTime.equals(commitment, Array(header[GrantFile.commitmentOffset...])) else { throw Failure.doesNotOpen }
            block = try context.open(aad: header, ciphertext: Array(file[GrantFile.headerSize ..< GrantFile.paddingOffset]))
        } catch CryptoError.authenticationFailed, CryptoError.weakSharedSecret {
            // A masked enc that unmasks to a low-order point is one more way of not being ours.
            throw Failure.doesNotOpen
        }
        defer { block.wipe() }
        do {
            return try UnlockRecord.decode(GrantFile.body(ofBlock: block), role: .grant)
        } catch let error as FormatError {
            throw Failure.damaged(error.description)
        }
    }

    /// M = HKDF(Z, "DotSafe v2 grant mask" || pkS || pkR || G, 32).
    static func maskValue(pairSecret: SecretBytes, sender: [UInt8], recipient: [UInt8], salt: [UInt8]) throws -> [UInt8] {
        try HKDF.deriveBytes(from: pairSecret, salt: [], info: GrantFile.maskInfo(sender: sender, recipient: recipient, salt: salt),
                             count: GrantFile.encSize)
    }
}
