import DotSafeTestSupport
import Testing
@testable import VaultCrypto

/// HPKE against RFC 9180 Appendix A.1 (DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM):
/// A.1.1 Base and A.1.3 Auth, every intermediate value the RFC lists, both directions.
@Suite struct HPKETests {
    static let records = (try? VectorFile.load("rfc9180-hpke.txt", in: .module)) ?? []

    static func mode(_ record: VectorRecord) throws -> HPKE.Mode {
        try #require(HPKE.Mode(rawValue: UInt8(try record.int("MODE"))))
    }

    @Test func theFileHasBothModes() throws {
        #expect(try Self.records.map { try Self.mode($0) } == [.base, .auth])
    }

    @Test(arguments: records) func deriveKeyPairGivesTheRFCsKeys(record: VectorRecord) throws {
        for role in ["E", "R", "S"] where record.fields["IKM\(role)"] != nil {
            let key = try HPKE.deriveKeyPair(ikm: record.hex("IKM\(role)"))
            #expect(key.rawRepresentation.copyBytes() == (try record.hex("SK\(role)M")), "sk\(role) of \(record)")
            #expect(key.publicKey == (try record.hex("PK\(role)M")), "pk\(role) of \(record)")
        }
    }

    @Test(arguments: records) func theKeyScheduleGivesTheRFCsValues(record: VectorRecord) throws {
        let ephemeral = try X25519.PrivateKey(rawRepresentation: record.hex("SKEM"))
        let sender = try record.fields["SKSM"].map { try X25519.PrivateKey(rawRepresentation: hexBytes($0)) }
        let (shared, enc) = try HPKE.encapsulate(recipient: record.hex("PKRM"), sender: sender, ephemeral: ephemeral)
        #expect(enc == (try record.hex("ENC")))
        #expect(shared.copyBytes() == (try record.hex("SHARED_SECRET")))
        let recipient = try X25519.PrivateKey(rawRepresentation: record.hex("SKRM"))
        let decapsulated = try HPKE.decapsulate(enc: enc, recipient: recipient, sender: sender?.publicKey)
        #expect(decapsulated.copyBytes() == shared.copyBytes())
        let schedule = try HPKE.keySchedule(mode: try Self.mode(record), sharedSecret: shared, info: record.hex("INFO"), aead: .aes128GCM)
        #expect(schedule.keyScheduleContext == (try record.hex("KEY_SCHEDULE_CONTEXT")))
        #expect(schedule.secret.copyBytes() == (try record.hex("SECRET")))
        #expect(schedule.context.key.copyBytes() == (try record.hex("KEY")))
        #expect(schedule.context.baseNonce == (try record.hex("BASE_NONCE")))
        #expect(schedule.context.exporterSecret.copyBytes() == (try record.hex("EXPORTER_SECRET")))
    }

    /// The public setup functions, sender and recipient, then every encryption and export.
    @Test(arguments: records) func encryptionsAndExports(record: VectorRecord) throws {
        let info = try record.hex("INFO"), pkR = try record.hex("PKRM")
        let ephemeral = try X25519.PrivateKey(rawRepresentation: record.hex("SKEM"))
        let recipient = try X25519.PrivateKey(rawRepresentation: record.hex("SKRM"))
        let setup: (enc: [UInt8], context: HPKE.Context)
        let receiver: HPKE.Context
        switch try Self.mode(record) {
        case .base:
            setup = try HPKE.setupBaseSender(recipient: pkR, info: info, aead: .aes128GCM, ephemeral: ephemeral)
            receiver = try HPKE.setupBaseRecipient(enc: setup.enc, recipient: recipient, info: info, aead: .aes128GCM)
        case .auth:
            let senderKey = try X25519.PrivateKey(rawRepresentation: record.hex("SKSM"))
            setup = try HPKE.setupAuthSender(recipient: pkR, info: info, aead: .aes128GCM, sender: senderKey, ephemeral: ephemeral)
            receiver = try HPKE.setupAuthRecipient(enc: setup.enc, recipient: recipient, info: info, aead: .aes128GCM,
                                                   sender: record.hex("PKSM"))
        }
        let (enc, sender) = setup
        #expect(enc == (try record.hex("ENC")))
        let plaintext = try record.hex("PT")
        for index in 0..<6 {
            let sequence = try record.uint64("SEQ\(index)"), aad = try record.hex("AAD\(index)")
            sender.sequence = sequence
            receiver.sequence = sequence
            #expect(sender.nonce() == (try record.hex("NONCE\(index)")), "nonce \(index) of \(record)")
            #expect(try sender.seal(aad: aad, plaintext: plaintext) == record.hex("CT\(index)"), "ct \(index) of \(record)")
            #expect(try receiver.open(aad: aad, ciphertext: record.hex("CT\(index)")) == plaintext)
            #expect(sender.sequence == sequence + 1 && receiver.sequence == sequence + 1)
        }
        for index in 0..<3 {
            let exported = try receiver.export(context: record.hex("EXPCTX\(index)"), count: 32)
            #expect(exported.copyBytes() == (try record.hex("EXPVALUE\(index)")), "export \(index) of \(record)")
            #expect(try sender.export(context: record.hex("EXPCTX\(index)"), count: 32).copyBytes() == exported.copyBytes())
        }
    }

    /// Auth mode: a recipient who expects another sender gets nothing, and says nothing of why.
    @Test func authModeRefusesAnotherSender() throws {
        let record = try #require(Self.records.last)
        let recipient = try X25519.PrivateKey(rawRepresentation: record.hex("SKRM"))
        let impostor = try X25519.PrivateKey()
        let context = try HPKE.setupAuthRecipient(enc: record.hex("ENC"), recipient: recipient, info: record.hex("INFO"),
                                                  aead: .aes128GCM, sender: impostor.publicKey)
        #expect(throws: CryptoError.authenticationFailed) {
            try context.open(aad: record.hex("AAD0"), ciphertext: record.hex("CT0"))
        }
        #expect(context.sequence == 0)
        // Base mode on an Auth encapsulation (the sender's DH left out) fails the same way.
        let base = try HPKE.setupBaseRecipient(enc: record.hex("ENC"), recipient: recipient, info: record.hex("INFO"), aead: .aes128GCM)
        #expect(throws: CryptoError.authenticationFailed) { try base.open(aad: record.hex("AAD0"), ciphertext: record.hex("CT0")) }
    }

    /// The same code with AES-256-GCM (the grants' AEAD): a 32-byte key, both modes round-trip,
    /// and a wrong info or a flipped byte is refused.
    @Test(arguments: [HPKE.Mode.base, .auth]) func aes256GCMRoundTrips(mode: HPKE.Mode) throws {
        let recipient = try X25519.PrivateKey(), sender = try X25519.PrivateKey()
        let info = Array("DotSafe test".utf8), aad = [UInt8](repeating: 7, count: 5), plaintext = Array("the vault key".utf8)
        let (enc, context) = try mode == .base
            ? HPKE.setupBaseSender(recipient: recipient.publicKey, info: info, aead: .aes256GCM, ephemeral: X25519.PrivateKey())
            : HPKE.setupAuthSender(recipient: recipient.publicKey, info: info, aead: .aes256GCM, sender: sender, ephemeral: X25519.PrivateKey())
        #expect(context.key.count == 32)
        let sealed = try context.seal(aad: aad, plaintext: plaintext)
        #expect(sealed.count == plaintext.count + 16)
        func receiver(_ info: [UInt8]) throws -> HPKE.Context {
            try mode == .base ? HPKE.setupBaseRecipient(enc: enc, recipient: recipient, info: info, aead: .aes256GCM)
                : HPKE.setupAuthRecipient(enc: enc, recipient: recipient, info: info, aead: .aes256GCM, sender: sender.publicKey)
        }
        #expect(try receiver(info).open(aad: aad, ciphertext: sealed) == plaintext)
        #expect(throws: CryptoError.authenticationFailed) { try receiver(info + [0]).open(aad: aad, ciphertext: sealed) }
        var flipped = sealed
        flipped[0] ^= 1
        #expect(throws: CryptoError.authenticationFailed) { try receiver(info).open(aad: aad, ciphertext: flipped) }
    }

    /// A low-order point as enc (or as a sender key) makes an all-zero DH: refused (RFC 9180 §7.1.4).
    @Test func lowOrderPointsAreRefused() throws {
        let recipient = try X25519.PrivateKey()
        let zero = [UInt8](repeating: 0, count: 32)
        #expect(throws: CryptoError.weakSharedSecret) {
            try HPKE.setupBaseRecipient(enc: zero, recipient: recipient, info: [], aead: .aes256GCM)
        }
        #expect(throws: CryptoError.weakSharedSecret) {
            try HPKE.setupAuthSender(recipient: zero, info: [], aead: .aes256GCM, sender: recipient, ephemeral: X25519.PrivateKey())
        }
        #expect(throws: CryptoError.invalidInput("X25519 public key must be 32 bytes, got 31")) {
            try HPKE.setupBaseRecipient(enc: [UInt8](repeating: 9, count: 31), recipient: recipient, info: [], aead: .aes256GCM)
        }
    }
}
