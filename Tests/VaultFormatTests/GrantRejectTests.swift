import DotSafeTestSupport
import Testing
import VaultCore
import VaultCrypto
import VaultFormat

/// docs/FORMAT.md §14.4: what a recipient MUST refuse, each with the error it gets, and that the
/// refusal does not depend on the recipient's code path (one `doesNotOpen` for every forgery).
@Suite struct GrantRejectTests {
    struct Parties {
        let sharer: X25519.PrivateKey
        let recipient: X25519.PrivateKey
        let stranger: X25519.PrivateKey
        let record: UnlockRecord
        let file: [UInt8]

        init() throws {
            sharer = try X25519.PrivateKey(); recipient = try X25519.PrivateKey(); stranger = try X25519.PrivateKey()
            record = UnlockRecord(role: .grant, vaultKey: [UInt8](repeating: 0x11, count: 32), rootLocator: [UInt8](repeating: 0x22, count: 32),
                                  ownFile: FileRef(device: 0, number: 9))
            file = try GrantSeal.seal(record, from: sharer, to: recipient.publicKey)
        }
    }

    static let doesNotOpen = "the grant does not open: it was not made by that contact code for this vault, or it was changed"

    @Test func theRecipientOpensIt() throws {
        let parties = try Parties()
        #expect(try GrantSeal.open(parties.file, recipient: parties.recipient, sender: parties.sharer.publicKey) == parties.record)
        #expect(GrantSeal.Failure.doesNotOpen.description == Self.doesNotOpen)
    }

    /// A flipped bit anywhere in the header or the sealed block: salt, masked enc, commitment,
    /// ciphertext, tag. (The padding after byte 1,120 is random bytes no one reads.)
    @Test(arguments: [0, 15, 16, 47, 48, 79, 80, 600, 1103, 1119])
    func aTamperedGrantDoesNotOpen(offset: Int) throws {
        let parties = try Parties()
        var tampered = parties.file
        tampered[offset] ^= 0x01
        #expect(throws: GrantSeal.Failure.doesNotOpen) {
            try GrantSeal.open(tampered, recipient: parties.recipient, sender: parties.sharer.publicKey)
        }
    }

    /// Sealed to the stranger: the recipient cannot open it (with the right sender named).
    @Test func aGrantForSomeoneElseDoesNotOpen() throws {
        let parties = try Parties()
        let forStranger = try GrantSeal.seal(parties.record, from: parties.sharer, to: parties.stranger.publicKey)
        #expect(throws: GrantSeal.Failure.doesNotOpen) {
            try GrantSeal.open(forStranger, recipient: parties.recipient, sender: parties.sharer.publicKey)
        }
        // And it does not even sit at the recipient's name.
        #expect(try GrantSeal.name(sharing: parties.sharer, with: parties.stranger.publicKey, location: Label.localLocation)
                != GrantSeal.name(receiving: parties.recipient, from: parties.sharer.publicKey, location: Label.localLocation))
    }

    /// Made by the stranger and presented as the sharer's: Auth mode refuses it, and the name
    /// the stranger can compute is not the sharer's.
    @Test func aGrantClaimingAnotherSenderDoesNotOpen() throws {
        let parties = try Parties()
        let forged = try GrantSeal.seal(parties.record, from: parties.stranger, to: parties.recipient.publicKey)
        #expect(throws: GrantSeal.Failure.doesNotOpen) {
            try GrantSeal.open(forged, recipient: parties.recipient, sender: parties.sharer.publicKey)
        }
        // Opened as what it is, it opens: the recipient learns who made it.
        #expect(try GrantSeal.open(forged, recipient: parties.recipient, sender: parties.stranger.publicKey) == parties.record)
        #expect(try GrantSeal.name(sharing: parties.stranger, with: parties.recipient.publicKey, location: Label.localLocation)
                != GrantSeal.name(receiving: parties.recipient, from: parties.sharer.publicKey, location: Label.localLocation))
    }

    /// The right grant opened with another private key (the stranger's) gets nothing.
    @Test func theWrongKeyDoesNotOpen() throws {
        let parties = try Parties()
        #expect(throws: GrantSeal.Failure.doesNotOpen) {
            try GrantSeal.open(parties.file, recipient: parties.stranger, sender: parties.sharer.publicKey)
        }
    }

    /// Key commitment: a grant whose commitment is replaced by the one another key would give is
    /// refused before the AEAD runs (a commitment that matches no key never opens).
    @Test func theCommitmentIsChecked() throws {
        let parties = try Parties()
        let other = try GrantSeal.seal(parties.record, from: parties.sharer, to: parties.recipient.publicKey)
        var spliced = parties.file
        spliced.replaceSubrange(GrantFile.commitmentOffset ..< GrantFile.headerSize,
                                with: other[GrantFile.commitmentOffset ..< GrantFile.headerSize])
        #expect(throws: GrantSeal.Failure.doesNotOpen) {
            try GrantSeal.open(spliced, recipient: parties.recipient, sender: parties.sharer.publicKey)
        }
    }

    @Test func ownCodeAndUnusableCodesAreRefused() throws {
        let parties = try Parties()
        #expect(throws: GrantSeal.Failure.ownCode) {
            try GrantSeal.seal(parties.record, from: parties.sharer, to: parties.sharer.publicKey)
        }
        #expect(throws: GrantSeal.Failure.ownCode) {
            try GrantSeal.open(parties.file, recipient: parties.recipient, sender: parties.recipient.publicKey)
        }
        #expect(throws: GrantSeal.Failure.unusableCode) {
            try GrantSeal.name(sharing: parties.sharer, with: [UInt8](repeating: 0, count: 32), location: Label.localLocation)
        }
        #expect(GrantSeal.Failure.ownCode.description == "that contact code is this vault's own; give the other person's code")
        #expect(GrantSeal.Failure.unusableCode.description == "that contact code is not a usable key")
    }

    @Test func aFileOfAnotherSizeIsDamage() throws {
        let parties = try Parties()
        #expect(throws: GrantSeal.Failure.damaged("a grant file has 262192 bytes, not 262191")) {
            try GrantSeal.open(Array(parties.file.dropLast()), recipient: parties.recipient, sender: parties.sharer.publicKey)
        }
    }

    /// A grant is a cover to everyone else: its bytes pass the same crude checks as random ones
    /// (no fixed bytes, and the masked enc's top bit, always 0 in an X25519 key, takes both values).
    @Test func grantsLookLikeCovers() throws {
        let sharer = try X25519.PrivateKey(), recipient = try X25519.PrivateKey()
        let record = try Parties().record
        var topBits = Set<UInt8>()
        var first: [UInt8]?
        for _ in 0..<24 {
            let file = try GrantSeal.seal(record, from: sharer, to: recipient.publicKey)
            topBits.insert(file[GrantFile.encOffset + 31] >> 7)
            if let first { #expect(zip(first, file).prefix(GrantFile.paddingOffset).filter { $0 == $1 }.count < 30) }
            first = first ?? file
            let ones = file.reduce(0) { $0 + $1.nonzeroBitCount }
            #expect(abs(ones - Format.fileSize * 4) < 4000)
        }
        #expect(topBits == [0, 1])
    }
}

/// The grant block and body rules of §14.4, on the format alone.
@Suite struct GrantBlockTests {
    static let body = UnlockRecord(role: .grant, vaultKey: [UInt8](repeating: 1, count: 32), rootLocator: [UInt8](repeating: 2, count: 32),
                                   ownFile: FileRef(device: 0, number: 9)).encode()

    @Test func aBlockRoundTrips() throws {
        let block = GrantFile.block(body: Self.body)
        #expect(block.count == GrantFile.blockSize)
        #expect(Array(try GrantFile.body(ofBlock: block)) == Self.body)
        #expect(try UnlockRecord.decode(GrantFile.body(ofBlock: block), role: .grant).role == .grant)
    }

    @Test(arguments: [
        (0, UInt8(3), FormatError.newerVersion(found: 3)),
        (0, UInt8(1), FormatError.invalid("grant block version 1")),
        (1, UInt8(4), FormatError.invalid("grant block kind 4")),
        (2, UInt8(1), FormatError.invalid("grant block reserved bytes")),
        (5, UInt8(4), FormatError.invalid("grant block length 1117")),
        (1023, UInt8(1), FormatError.invalid("grant block padding")),
    ])
    func aBadBlockIsRefused(offset: Int, value: UInt8, expected: FormatError) throws {
        var block = GrantFile.block(body: Self.body)
        block[offset] = value
        #expect(throws: expected) { try GrantFile.body(ofBlock: block) }
    }

    /// An owner record inside a grant, a grant where an owner record is expected, and a grant
    /// that carries an identity key: each refused.
    @Test func rolesAndTheIdentityKeyAreChecked() throws {
        let owner = UnlockRecord(role: .owner, vaultKey: [UInt8](repeating: 1, count: 32), rootLocator: [UInt8](repeating: 2, count: 32),
                                 ownFile: FileRef(device: 0, number: 9), identityKey: [UInt8](repeating: 3, count: 32))
        #expect(throws: FormatError.invalid("unlock record role 1")) { try UnlockRecord.decode(owner.encode()[...], role: .grant) }
        #expect(throws: FormatError.invalid("unlock record role 2")) { try UnlockRecord.decode(Self.body[...]) }
        var withIdentity = owner
        withIdentity.role = .grant
        #expect(throws: FormatError.invalid("unlock record: a grant holds an identity key")) {
            try UnlockRecord.decode(withIdentity.encode()[...], role: .grant)
        }
        #expect(try UnlockRecord.decode(owner.encode()[...]) == owner)
    }

    /// §14.8: an ended grant (role 3) opens where a grant is expected and holds tag 3 alone; as
    /// an owner's record, or with keys or optional tags, it is refused.
    @Test func anEndedGrantHoldsItsFileOnly() throws {
        let ended = UnlockRecord(role: .ended, vaultKey: [], rootLocator: [], ownFile: FileRef(device: 0, number: 9))
        #expect(ended.encode() == [3, 1, 0, 3, 0, 8, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0])
        #expect(try UnlockRecord.decode(ended.encode()[...], role: .grant) == ended)
        #expect(throws: FormatError.invalid("unlock record role 3")) { try UnlockRecord.decode(ended.encode()[...]) }
        var keysEncoded = Self.body
        keysEncoded[0] = UnlockRecord.Role.ended.rawValue
        #expect(throws: FormatError.invalid("unlock record: an ended grant holds its file only")) {
            try UnlockRecord.decode(keysEncoded[...], role: .grant)
        }
        let optional = UnlockRecord(role: .ended, vaultKey: [], rootLocator: [], ownFile: FileRef(device: 0, number: 9),
                                    optional: [IndexRootV2.Extension(tag: 1024, value: [1])])
        #expect(throws: FormatError.invalid("unlock record: an ended grant holds its file only")) {
            try UnlockRecord.decode(optional.encode()[...], role: .grant)
        }
    }
}
