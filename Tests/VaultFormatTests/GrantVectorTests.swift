import DotSafeTestSupport
import Testing
@testable import VaultCore
@testable import VaultCrypto
import VaultFormat

/// docs/FORMAT.md §14.3, §14.6: grants sealed by `GrantSeal` match, byte for byte, what
/// tools/vectors/grants.py computes with its own HPKE; the vectors open to their records.
@Suite struct GrantVectorTests {
    static let records = (try? VectorFile.load("grant.txt", in: .module)) ?? []

    static func stated(_ record: VectorRecord) throws -> UnlockRecord {
        let parts = try record.string("FILEREF").split(separator: ".")
        let ref = FileRef(device: UInt16(parts[0])!, number: UInt64(parts[1])!)
        let optional = try record.hex("OPTIONAL")
        if try record.string("ROLE") == "3" { return UnlockRecord(role: .ended, vaultKey: [], rootLocator: [], ownFile: ref) }
        return UnlockRecord(role: .grant, vaultKey: try record.hex("VK"), rootLocator: try record.hex("RL"), ownFile: ref,
                            optional: optional.isEmpty ? [] : [IndexRootV2.Extension(tag: 1024, value: optional)])
    }

    static func file(_ record: VectorRecord) throws -> [UInt8] {
        let padding = try DeterministicRandom(seed: record.hex("PADDINGSEED")).bytes(GrantFile.paddingSize)
        return try record.hex("HEAD") + padding
    }

    @Test func theFileHasItsRecords() {
        #expect(Self.records.map { $0.fields["LOCATION"] } == ["local", "remote", "local"])
        #expect(Self.records.map { $0.fields["ROLE"] } == ["2", "2", "3"])
    }

    @Test(arguments: records) func identitiesAndCodes(record: VectorRecord) throws {
        let sender = try X25519.PrivateKey(rawRepresentation: record.hex("SKS"))
        let recipient = try X25519.PrivateKey(rawRepresentation: record.hex("SKR"))
        #expect(sender.publicKey == (try record.hex("PKS")))
        #expect(recipient.publicKey == (try record.hex("PKR")))
        #expect(ContactCode(publicKey: sender.publicKey).text == (try record.string("CODES")))
        #expect(try ContactCode.parse(record.string("CODER")).publicKey == recipient.publicKey)
    }

    @Test(arguments: records) func sealMatchesTheVector(record: VectorRecord) throws {
        let sender = try X25519.PrivateKey(rawRepresentation: record.hex("SKS"))
        let recipient = try record.hex("PKR")
        #expect(try Self.stated(record).encode() == record.hex("BODY"))
        let padding = try DeterministicRandom(seed: record.hex("PADDINGSEED")).bytes(GrantFile.paddingSize)
        let random = FixedRandom([try record.hex("G"), try record.hex("SKE"), padding])
        let file = try GrantSeal.seal(Self.stated(record), from: sender, to: recipient, random: random)
        #expect(random.isExhausted)
        #expect(file.count == Format.fileSize)
        #expect(Array(file[..<GrantFile.paddingOffset]) == (try record.hex("HEAD")))
        #expect(sha256(file) == (try record.hex("FILESHA256")))
    }

    /// Z, the name, the mask, enc and HPKE's schedule: the intermediate values, recomputed.
    @Test(arguments: records) func theDerivationsMatch(record: VectorRecord) throws {
        let sender = try X25519.PrivateKey(rawRepresentation: record.hex("SKS"))
        let recipient = try X25519.PrivateKey(rawRepresentation: record.hex("SKR"))
        let location = Array(try record.string("LOCATION").utf8)
        let z = try GrantSeal.pairSecret(identity: sender, peer: recipient.publicKey)
        #expect(z.copyBytes() == (try record.hex("Z")))
        #expect(try GrantSeal.name(sharing: sender, with: recipient.publicKey, location: location) == record.string("NAME"))
        #expect(try GrantSeal.name(receiving: recipient, from: sender.publicKey, location: location) == record.string("NAME"))
        let mask = try GrantSeal.maskValue(pairSecret: z, sender: sender.publicKey, recipient: recipient.publicKey, salt: record.hex("G"))
        #expect(mask == (try record.hex("MASK")))
        let ephemeral = try X25519.PrivateKey(rawRepresentation: record.hex("SKE"))
        #expect(ephemeral.publicKey == (try record.hex("ENC")))
        let (shared, _) = try HPKE.encapsulate(recipient: recipient.publicKey, sender: sender, ephemeral: ephemeral)
        #expect(shared.copyBytes() == (try record.hex("SHARED")))
        let context = try HPKE.keySchedule(mode: .auth, sharedSecret: shared, info: Label.grantInfo, aead: .aes256GCM).context
        #expect(context.key.copyBytes() == (try record.hex("KEY")))
        #expect(context.baseNonce == (try record.hex("BASENONCE")))
        #expect(context.exporterSecret.copyBytes() == (try record.hex("EXPORTER")))
        #expect(try context.export(context: Label.grantCommitment, count: 32).copyBytes() == record.hex("COMMITMENT"))
    }

    @Test(arguments: records) func theVectorOpensToItsRecord(record: VectorRecord) throws {
        let recipient = try X25519.PrivateKey(rawRepresentation: record.hex("SKR"))
        let opened = try GrantSeal.open(Self.file(record), recipient: recipient, sender: record.hex("PKS"))
        #expect(opened == (try Self.stated(record)))
        #expect(opened.role == (try Self.stated(record)).role && opened.identityKey.isEmpty)
    }

    /// The two locations give two names for one pair; the two directions give two more.
    @Test func namesDependOnLocationAndDirection() throws {
        let names = Set(Self.records.compactMap { $0.fields["NAME"] })
        #expect(names.count == 2)
        let record = try #require(Self.records.first)
        let sender = try X25519.PrivateKey(rawRepresentation: record.hex("SKS"))
        let recipient = try X25519.PrivateKey(rawRepresentation: record.hex("SKR"))
        let reverse = try GrantSeal.name(sharing: recipient, with: sender.publicKey, location: Label.localLocation)
        #expect(!names.contains(reverse))
        #expect(FileName.isWellFormed(reverse) && names.allSatisfy(FileName.isWellFormed))
    }
}
