import DotSafeTestSupport
import Testing
import VaultCrypto

@Suite struct PBKDF2Tests {
    @Test func rfc7914Vectors() throws {
        let records = try VectorFile.load("rfc7914-PBKDF2-HMAC-SHA256.txt", in: .module)
        #expect(records.count == 2)
        for record in records {
            let key = try PBKDF2.deriveKey(password: Array(record.string("PASSWORD").utf8),
                                           salt: Array(record.string("SALT").utf8),
                                           rounds: record.int("ROUNDS"), count: record.int("DKLEN"))
            #expect(key.copyBytes() == (try record.hex("DK")), "\(record)")
        }
    }

    @Test func emptyPasswordAndSaltWork() throws {
        // Value computed with Python: hashlib.pbkdf2_hmac("sha256", b"", b"", 1, 32).
        let expected = try hexBytes("f7ce0b653d2d72a4108cf5abe912ffdd777616dbbb27a70e8204f3ae2d0f6fad")
        #expect(try PBKDF2.deriveKey(password: [], salt: [], rounds: 1, count: 32).copyBytes() == expected)
    }

    @Test(arguments: [(0, 32), (-5, 32), (1, 0), (1, -1)])
    func rejectsNonsenseParameters(rounds: Int, count: Int) {
        do {
            _ = try PBKDF2.deriveKey(password: [1], salt: [2], rounds: rounds, count: count)
            Issue.record("accepted rounds \(rounds), count \(count)")
        } catch let error as CryptoError {
            guard case .invalidInput = error else { Issue.record("\(error)"); return }
        } catch {
            Issue.record("\(error)")
        }
    }
}
