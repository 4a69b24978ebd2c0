import Testing
import VaultCrypto

@Suite struct ConstantTimeTests {
    @Test func comparesContentsAndLengths() {
        let a: [UInt8] = Array(0..<32)
        var b = a
        #expect(ConstantTime.equals(a, b))
        b[31] ^= 1
        #expect(!ConstantTime.equals(a, b))
        b = a; b[0] ^= 0x80
        #expect(!ConstantTime.equals(a, b))
        #expect(!ConstantTime.equals(a, Array(a.dropLast())))
        #expect(!ConstantTime.equals([], [0]))
        #expect(ConstantTime.equals([], []))
    }
}
