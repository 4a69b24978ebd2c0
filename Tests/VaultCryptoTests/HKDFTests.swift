import DotSafeTestSupport
import Testing
import VaultCrypto

@Suite struct HKDFTests {
    @Test func rfc5869Vectors() throws {
        let records = try VectorFile.load("rfc-5869-HKDF-SHA256.txt", in: .module)
        #expect(records.count == 3)
        for record in records {
            #expect(try record.string("Hash") == "SHA-256")
            let ikm = try record.hex("IKM"), salt = try record.hex("salt"), info = try record.hex("info")
            let count = try record.int("L"), okm = try record.hex("OKM")
            #expect(okm.count == count)
            #expect(try HKDF.deriveBytes(ikm: ikm, salt: salt, info: info, count: count) == okm, "\(record)")

            let secret = try SecretBytes(copying: ikm)
            #expect(try HKDF.deriveBytes(from: secret, salt: salt, info: info, count: count) == okm, "\(record)")
            let key = try HKDF.deriveKey(from: secret, salt: salt, info: info, count: count)
            #expect(key.count == count)
            #expect(key.copyBytes() == okm, "\(record)")
        }
    }

    @Test func arenaKeyDerivesLikeSecretBytes() throws {
        let record = try #require(try VectorFile.load("rfc-5869-HKDF-SHA256.txt", in: .module).first)
        let ikm = try record.hex("IKM")
        let arena = SecretArena(slotSize: ikm.count)
        let slot = try arena.allocate(copying: ikm)
        let key = try HKDF.deriveKey(from: slot, in: arena, salt: record.hex("salt"), info: record.hex("info"),
                                     count: record.int("L"))
        #expect(key.copyBytes() == (try record.hex("OKM")))
    }

    @Test func emptyInputKeyIsAccepted() throws {
        // Value computed with Python cryptography 48: HKDF(SHA256(), 42, None, None).derive(b"").
        let expected = try hexBytes("eb70f01dede9afafa449eee1b1286504e1f62388b3f7dd4f956697b0e828fe181e59c2ec0fe6e7e7ac26")
        #expect(try HKDF.deriveBytes(ikm: [], salt: [], info: [], count: 42) == expected)
    }

    @Test func differentInfoGivesUnrelatedKeys() throws {
        let master = try SecretBytes.random(count: 32)
        let a = try HKDF.deriveKey(from: master, salt: [], info: Array("chunk 0".utf8), count: 32)
        let b = try HKDF.deriveKey(from: master, salt: [], info: Array("chunk 1".utf8), count: 32)
        #expect(a.copyBytes() != b.copyBytes())
    }

    @Test func outputSizeIsBounded() throws {
        #expect(HKDF.maximumOutputSize == 8160)
        #expect(try HKDF.deriveBytes(ikm: [1], salt: [], info: [], count: 8160).count == 8160)
        for count in [0, -1, 8161] {
            do {
                _ = try HKDF.deriveBytes(ikm: [1], salt: [], info: [], count: count)
                Issue.record("accepted count \(count)")
            } catch let error as CryptoError {
                guard case .invalidInput = error else { Issue.record("count \(count): \(error)"); continue }
            }
        }
    }
}
