import DotSafeTestSupport
import Testing
import VaultCrypto

@Suite struct AESGCMTests {
    // MARK: Published vectors

    @Test func nistEncryptVectors() throws {
        let records = try VectorFile.load("gcmEncryptExtIV256.rsp", in: .module)
        #expect(records.count == 375)
        #expect(records.contains { !$0.fields["AAD", default: ""].isEmpty })
        #expect(records.contains { $0.fields["AAD", default: "x"].isEmpty })
        for record in records {
            #expect(record.section["IVlen"] == "96" && record.section["Taglen"] == "128", "\(record)")
            let key = try SecretBytes(copying: record.hex("Key"))
            let sealed = try AESGCM.seal(record.hex("PT"), key: key, nonce: record.hex("IV"), aad: record.hex("AAD"))
            #expect(sealed == (try record.hex("CT") + record.hex("Tag")), "\(record)")
        }
    }

    @Test func nistDecryptVectorsIncludingFailures() throws {
        let records = try VectorFile.load("gcmDecrypt256.rsp", in: .module)
        #expect(records.count == 375)
        #expect(records.filter(\.isFail).count == 191)
        for record in records {
            #expect(record.section["IVlen"] == "96" && record.section["Taglen"] == "128", "\(record)")
            let key = try SecretBytes(copying: record.hex("Key"))
            let sealed = try record.hex("CT") + record.hex("Tag")
            let nonce = try record.hex("IV"), aad = try record.hex("AAD")
            if record.isFail {
                expectAuthenticationFailure("\(record)") { try AESGCM.open(sealed, key: key, nonce: nonce, aad: aad) }
            } else {
                #expect(try AESGCM.open(sealed, key: key, nonce: nonce, aad: aad) == record.hex("PT"), "\(record)")
            }
        }
    }

    // MARK: Rejection

    enum Tamper: String, CaseIterable, CustomTestStringConvertible {
        case ciphertextBit, tagBit, aadBit, truncatedTag, missingAAD, appendedByte, wrongKey, wrongNonce
        var testDescription: String { rawValue }
    }

    @Test(arguments: Tamper.allCases)
    func tamperingIsRejectedWithoutPlaintext(_ tamper: Tamper) throws {
        let random = DeterministicRandom(seed: [UInt8](repeating: 7, count: 32))
        let key = try SecretBytes.random(count: AESGCM.keySize, using: random)
        let nonce = try random.bytes(AESGCM.nonceSize)
        let aad = Array("header v1".utf8)
        let plaintext = try random.bytes(1000)
        var sealed = try AESGCM.seal(plaintext, key: key, nonce: nonce, aad: aad)
        #expect(try AESGCM.open(sealed, key: key, nonce: nonce, aad: aad) == plaintext)  // control

        var openKey = key, openNonce = nonce, openAAD = aad
        switch tamper {
        case .ciphertextBit: sealed[500] ^= 0x01
        case .tagBit: sealed[sealed.count - 1] ^= 0x80
        case .aadBit: openAAD[0] ^= 0x01
        case .truncatedTag: sealed.removeLast()
        case .missingAAD: openAAD = []
        case .appendedByte: sealed.append(0)
        case .wrongKey: openKey = try SecretBytes.random(count: AESGCM.keySize, using: random)
        case .wrongNonce: openNonce[11] ^= 0x01
        }
        expectAuthenticationFailure(tamper.rawValue) {
            try AESGCM.open(sealed, key: openKey, nonce: openNonce, aad: openAAD)
        }
        expectAuthenticationFailure(tamper.rawValue + " (slice)") {
            try AESGCM.open(([0xAA] + sealed + [0xBB])[1...sealed.count], key: openKey, nonce: openNonce, aad: openAAD)
        }
    }

    @Test(arguments: [0, 1, 15])
    func inputShorterThanTagIsAnAuthenticationFailure(count: Int) throws {
        let key = try SecretBytes(count: 32)
        expectAuthenticationFailure("\(count) bytes") {
            try AESGCM.open([UInt8](repeating: 0, count: count), key: key, nonce: [UInt8](repeating: 0, count: 12), aad: [])
        }
    }

    @Test func sizesComeFromTheCodeNotTheInput() throws {
        let key = try SecretBytes(count: 32)
        let shortKey = try SecretBytes(count: 16)
        #expect(throws: CryptoError.invalidKeySize(expected: 32, actual: 16)) {
            try AESGCM.seal([1, 2, 3], key: shortKey, nonce: [UInt8](repeating: 0, count: 12), aad: [])
        }
        #expect(throws: CryptoError.invalidKeySize(expected: 32, actual: 16)) {
            try AESGCM.open([UInt8](repeating: 0, count: 32), key: shortKey, nonce: [UInt8](repeating: 0, count: 12), aad: [])
        }
        for nonceCount in [0, 8, 11, 13, 16] {
            let nonce = [UInt8](repeating: 0, count: nonceCount)
            #expect(throws: CryptoError.self) { try AESGCM.seal([1], key: key, nonce: nonce, aad: []) }
            do {
                _ = try AESGCM.open([UInt8](repeating: 0, count: 32), key: key, nonce: nonce, aad: [])
                Issue.record("opened with a \(nonceCount)-byte nonce")
            } catch let error as CryptoError {
                guard case .invalidInput = error else { Issue.record("\(nonceCount)-byte nonce: \(error)"); continue }
            }
        }
        #expect(AESGCM.keySize == 32 && AESGCM.nonceSize == 12 && AESGCM.tagSize == 16)
    }

    // MARK: Variants

    @Test(arguments: [0, 1, 16, 4097, 256 * 1024, 256 * 1024 + 17])
    func roundTripsAtChunkSizes(count: Int) throws {
        let random = DeterministicRandom(seed: [UInt8](repeating: 1, count: 32))
        let key = try SecretBytes.random(count: 32, using: random)
        let nonce = try random.bytes(12), aad = try random.bytes(29), plaintext = try random.bytes(count)
        let sealed = try AESGCM.seal(plaintext, key: key, nonce: nonce, aad: aad)
        #expect(sealed.count == count + AESGCM.tagSize)
        if count >= 16 { #expect(Array(sealed.prefix(16)) != Array(plaintext.prefix(16))) }
        #expect(try AESGCM.open(sealed, key: key, nonce: nonce, aad: aad) == plaintext)
    }

    @Test func sliceVariantsMatchArrayVariants() throws {
        let random = DeterministicRandom(seed: [UInt8](repeating: 2, count: 32))
        let key = try SecretBytes.random(count: 32, using: random)
        let nonce = try random.bytes(12), aad = try random.bytes(5)
        let file = try random.bytes(3000)
        let plaintext = file[100..<2100]  // a slice that does not start at 0
        let sealed = try AESGCM.seal(plaintext, key: key, nonce: nonce, aad: aad)
        #expect(sealed == (try AESGCM.seal(Array(plaintext), key: key, nonce: nonce, aad: aad)))

        let blockFile = Array("HEADER".utf8) + sealed + Array("TRAILER".utf8)
        let opened = try AESGCM.open(blockFile[6..<(6 + sealed.count)], key: key, nonce: nonce, aad: aad)
        #expect(opened[...] == plaintext)
    }

    @Test func sealAppendingKeepsThePrefixAndMatchesPlainSeal() throws {
        let random = DeterministicRandom(seed: [UInt8](repeating: 3, count: 32))
        let key = try SecretBytes.random(count: 32, using: random)
        let nonce = try random.bytes(12), aad = try random.bytes(7), plaintext = try random.bytes(5000)
        let expected = try AESGCM.seal(plaintext, key: key, nonce: nonce, aad: aad)

        var output: [UInt8] = [0xDE, 0xAD] + nonce
        let header = output
        try AESGCM.seal(plaintext, key: key, nonce: nonce, aad: aad, appendingTo: &output)
        #expect(output == header + expected)

        var sliceOutput = header
        try AESGCM.seal(plaintext[...], key: key, nonce: nonce, aad: aad, appendingTo: &sliceOutput)
        #expect(sliceOutput == header + expected)

        var failed = header
        #expect(throws: CryptoError.self) {
            try AESGCM.seal(plaintext, key: key, nonce: [1, 2, 3], aad: aad, appendingTo: &failed)
        }
        #expect(failed == header)
    }

    /// A chunk sealed from, and opened into, the cache's memory: the same bytes as the array
    /// forms; a tampered one leaves the buffer empty and zero.
    @Test(arguments: [0, 1000, 256 * 1024 - 100])
    func plaintextBufferVariantsMatchArrayVariants(bodyCount: Int) throws {
        let random = DeterministicRandom(seed: [UInt8](repeating: 4, count: 32))
        let key = try SecretBytes.random(count: 32, using: random)
        let nonce = try random.bytes(12), aad = try random.bytes(9)
        let prefix = try random.bytes(8), body = try random.bytes(bodyCount), suffix = try random.bytes(100)
        let pool = PlaintextPool(lockBudget: nil)
        var sealed: [UInt8] = [0xAB]
        try AESGCM.seal(prefix, PlaintextBuffer(pool: pool, copying: body), suffix, key: key, nonce: nonce, aad: aad,
                        appendingTo: &sealed)
        #expect(sealed == [0xAB] + (try AESGCM.seal(prefix + body + suffix, key: key, nonce: nonce, aad: aad)))

        let opened = PlaintextBuffer(pool: pool, copying: [7, 7, 7])
        let head = try AESGCM.open(sealed[1...], key: key, nonce: nonce, aad: aad, prefixCount: 8, into: opened)
        #expect(head == prefix && opened.allBytes == body + suffix)
        sealed[sealed.count - 1] ^= 0x01
        expectAuthenticationFailure("tag") {
            try AESGCM.open(sealed[1...], key: key, nonce: nonce, aad: aad, prefixCount: 8, into: opened)
        }
        #expect(opened.count == 0, "a failed open left bytes in the buffer")
        #expect(pool.currentBytes(of: opened.currentBlock).allSatisfy { $0 == 0 }, "a failed open left plaintext in the block")
    }

    @Test func freshNoncesGiveDifferentCiphertexts() throws {
        let key = try SecretBytes.random(count: 32)
        let plaintext = [UInt8](repeating: 0x41, count: 64)
        let a = try AESGCM.seal(plaintext, key: key, nonce: SystemRandom().bytes(12), aad: [])
        let b = try AESGCM.seal(plaintext, key: key, nonce: SystemRandom().bytes(12), aad: [])
        #expect(a != b)
    }
}

/// Expects exactly `.authenticationFailed` and no plaintext.
func expectAuthenticationFailure(_ what: String, sourceLocation: SourceLocation = #_sourceLocation,
                                 _ body: () throws -> [UInt8]) {
    do {
        let plaintext = try body()
        Issue.record("\(what): returned \(plaintext.count) bytes of plaintext", sourceLocation: sourceLocation)
    } catch let error as CryptoError {
        #expect(error == .authenticationFailed, "\(what)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(what): unexpected \(error)", sourceLocation: sourceLocation)
    }
}
