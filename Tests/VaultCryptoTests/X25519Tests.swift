import DotSafeTestSupport
import Testing
import VaultCrypto

@Suite struct X25519Tests {
    @Test func rfc7748SingleCallVectors() throws {
        let records = try VectorFile.load("rfc7748.txt", in: .module)
        #expect(records.count == 3)
        for record in records {
            let key = try X25519.PrivateKey(rawRepresentation: record.hex("INPUT_SCALAR"))
            let shared = try key.sharedSecret(with: record.hex("INPUT_U"))
            #expect(shared.copyBytes() == (try record.hex("OUTPUT_U")), "\(record)")
        }
    }

    @Test func rfc7748AliceAndBob() throws {
        let record = try #require(try VectorFile.load("rfc7748-section6.1.txt", in: .module).first)
        let alice = try X25519.PrivateKey(rawRepresentation: record.hex("ALICE_PRIVATE"))
        let bob = try X25519.PrivateKey(rawRepresentation: record.hex("BOB_PRIVATE"))
        #expect(alice.publicKey == (try record.hex("ALICE_PUBLIC")))
        #expect(bob.publicKey == (try record.hex("BOB_PUBLIC")))
        #expect(try alice.sharedSecret(with: bob.publicKey).copyBytes() == record.hex("SHARED"))
        #expect(try bob.sharedSecret(with: alice.publicKey).copyBytes() == record.hex("SHARED"))
        #expect(alice.rawRepresentation.copyBytes() == (try record.hex("ALICE_PRIVATE")))
    }

    @Test func freshKeysAgree() throws {
        let a = try X25519.PrivateKey(), b = try X25519.PrivateKey()
        #expect(a.publicKey != b.publicKey)
        let ab = try a.sharedSecret(with: b.publicKey), ba = try b.sharedSecret(with: a.publicKey)
        #expect(ab.copyBytes() == ba.copyBytes())
        #expect(ab.count == 32)
    }

    /// Low-order points (u = 0, u = 1, a point of order 8, u = p - 1) make the result all zero.
    @Test(arguments: [
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    ])
    func lowOrderPeerIsRejected(_ point: String) throws {
        let key = try X25519.PrivateKey()
        let peer = try hexBytes(point)
        #expect(throws: CryptoError.weakSharedSecret) { try key.sharedSecret(with: peer) }
    }

    @Test func wrongLengthsAreRejected() throws {
        let key = try X25519.PrivateKey()
        for count in [0, 31, 33] {
            do {
                _ = try key.sharedSecret(with: [UInt8](repeating: 9, count: count))
                Issue.record("accepted a \(count)-byte public key")
            } catch let error as CryptoError {
                guard case .invalidInput = error else { Issue.record("\(count) bytes: \(error)"); continue }
            }
        }
        #expect(throws: CryptoError.invalidKeySize(expected: 32, actual: 31)) {
            try X25519.PrivateKey(rawRepresentation: [UInt8](repeating: 1, count: 31))
        }
    }

    @Test func keyGenerationReportsRandomFailure() {
        #expect(throws: CryptoError.randomSourceFailed) { try X25519.PrivateKey(using: FailingRandom()) }
    }

    @Test func keyGenerationUsesTheGivenRandomSource() throws {
        let seed = [UInt8](repeating: 0, count: 32)
        let a = try X25519.PrivateKey(using: DeterministicRandom(seed: seed))
        let b = try X25519.PrivateKey(using: DeterministicRandom(seed: seed))
        #expect(a.publicKey == b.publicKey)
        let stream = try DeterministicRandom(seed: seed).bytes(32)
        #expect(a.rawRepresentation.copyBytes() == stream)
        #expect(a.publicKey == (try X25519.PrivateKey(rawRepresentation: stream).publicKey))
    }
}
