import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat

/// Chunks sealed from, and opened into, the cache's memory (`Sealer+PlaintextBuffer`): the same
/// envelopes as the array forms make and open, refused where they refuse, and nothing left in
/// the buffer when refused.
@Suite struct SealerBufferTests {
    static func zeroFrom(_ start: Int, _ buffer: PlaintextBuffer, _ pool: PlaintextPool) -> Bool {
        pool.currentBytes(of: buffer.currentBlock)[start...].allSatisfy { $0 == 0 }
    }

    @Test(arguments: [0, 5000, Format.payloadSize])
    func theSameEnvelopeBothWays(bodyCount: Int) throws {
        let random = DeterministicRandom(seed: [UInt8](repeating: 9, count: 32))
        let key = Sealer.Key.secret(try SecretBytes.random(count: Format.keySize, using: random))
        let body = try random.bytes(bodyCount), padding = try random.bytes(Format.payloadSize - bodyCount)
        let oneTime = try Sealer.OneTimeKey(key, random: random)
        let seal = SealContext.chunk(item: 7, index: 3)
        let pool = PlaintextPool(lockBudget: nil)
        let file = try Sealer.sealEnvelope(kind: .chunk, body: PlaintextBuffer(pool: pool, copying: body), padding: padding,
                                           with: oneTime, seal: seal)
        #expect(file == (try Sealer.sealEnvelope(kind: .chunk, body: body[...], padding: padding, with: oneTime, seal: seal)))

        // As a streamed read gives it: a slice of a larger array, not starting at index 0.
        let read = [UInt8](repeating: 0xa5, count: 4000) + file + [0xa5]
        let opened = PlaintextBuffer(pool: pool)
        try Sealer.openEnvelope(read[4000..<4000 + file.count], expectedNonce: oneTime.nonce, kind: .chunk, with: oneTime, seal: seal, into: opened)
        #expect(opened.allBytes == body)
        #expect(Self.zeroFrom(bodyCount, opened, pool), "the padding is left in the cache's memory")
    }

    @Test func whatTheArrayFormRefusesLeavesTheBufferEmpty() throws {
        let random = DeterministicRandom(seed: [UInt8](repeating: 10, count: 32))
        let key = Sealer.Key.secret(try SecretBytes.random(count: Format.keySize, using: random))
        let oneTime = try Sealer.OneTimeKey(key, random: random)
        let body = try random.bytes(3000), padding = try random.bytes(Format.payloadSize - 3000)
        let seal = SealContext.chunk(item: 7, index: 3)
        let chunk = try Sealer.sealEnvelope(kind: .chunk, body: body[...], padding: padding, with: oneTime, seal: seal)
        let page = try Sealer.sealEnvelope(kind: .indexPage, body: body[...], padding: padding, with: oneTime, seal: seal)
        var flipped = chunk
        flipped[1000] ^= 0x01
        let other = try Sealer.OneTimeKey(key, random: random)
        let cases: [(String, [UInt8], [UInt8]?, Sealer.OneTimeKey, SealContext)] = [
            ("another kind", page, nil, oneTime, seal),
            ("another place", chunk, nil, oneTime, .chunk(item: 7, index: 4)),
            ("a flipped bit", flipped, nil, oneTime, seal),
            ("another nonce than recorded", chunk, other.nonce, oneTime, seal),
            ("another file's key", chunk, nil, other, seal),
            ("a short file", Array(chunk.dropLast()), nil, oneTime, seal),
        ]
        for (what, file, expected, key, context) in cases {
            let pool = PlaintextPool(lockBudget: nil)
            let buffer = PlaintextBuffer(pool: pool, copying: [1, 2, 3])
            #expect(throws: (any Error).self, "\(what)") {
                try Sealer.openEnvelope(file, expectedNonce: expected, kind: .chunk, with: key, seal: context)
            }
            #expect(throws: (any Error).self, "\(what)") {
                try Sealer.openEnvelope(([0] + file)[1...], expectedNonce: expected, kind: .chunk, with: key, seal: context, into: buffer)
            }
            #expect(buffer.count == 0 || buffer.allBytes == [1, 2, 3], "\(what): the buffer holds what did not open")
            if buffer.count == 0 { #expect(Self.zeroFrom(0, buffer, pool), "\(what): plaintext left in the block") }
        }
    }
}
