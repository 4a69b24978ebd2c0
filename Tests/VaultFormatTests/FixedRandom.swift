import Synchronization
import VaultCrypto

/// Hands out scripted byte strings, one per `fill`, each of exactly the size asked for: a seal
/// with a given nonce and padding is then reproducible without any change to the engine.
final class FixedRandom: RandomSource {
    private let script: Mutex<[[UInt8]]>

    init(_ script: [[UInt8]]) { self.script = Mutex(script) }

    var isExhausted: Bool { script.withLock { $0.isEmpty } }

    func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        try script.withLock { script in
            guard let next = script.first, next.count == buffer.count else { throw CryptoError.randomSourceFailed }
            script.removeFirst()
            buffer.copyBytes(from: next)
        }
    }
}
