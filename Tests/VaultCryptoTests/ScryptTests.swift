import DotSafeTestSupport
import Testing
import VaultCrypto

@Suite struct ScryptTests {
    @Test func rfc7914Vectors() throws {
        let records = try VectorFile.load("rfc7914-scrypt.txt", in: .module)
        #expect(records.count == 3)
        for record in records {
            let key = try Scrypt.deriveKey(password: Array(record.string("PASSWORD").utf8), salt: Array(record.string("SALT").utf8),
                                           n: UInt64(record.int("N")), r: UInt32(record.int("R")), p: UInt32(record.int("P")),
                                           count: record.int("DKLEN"))
            #expect(key.copyBytes() == (try record.hex("DK")), "\(record)")
        }
    }

    @Test(arguments: [(UInt64(0), UInt32(8), UInt32(1)), (1, 8, 1), (1000, 8, 1), (1024, 0, 1), (1024, 8, 0), (1 << 22, 8, 1)])
    func rejectsNonsenseAndHugeParameters(n: UInt64, r: UInt32, p: UInt32) {
        // 2^22 · 8 · 128 bytes is 4 GiB: a planted keyring must not make a process allocate that.
        #expect(throws: CryptoError.self) { try Scrypt.deriveKey(password: [1], salt: [2], n: n, r: r, p: p, count: 32) }
    }

    @Test func memoryIsTheRFCsFormula() {
        #expect(Scrypt.memory(n: 1 << 17, r: 8) == 128 << 20)
        #expect(Scrypt.memory(n: .max, r: 8) == .max)
    }
}
