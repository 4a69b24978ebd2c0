import Synchronization
import VaultCrypto

/// Hands out scripted byte strings, one per draw, each of exactly the size asked for (a draw of
/// another size fails): a seal with a given nonce and padding is then reproducible without any
/// change to the engine.
public final class FixedRandom: RandomSource {
    private let script: Mutex<[[UInt8]]>

    public init(_ script: [[UInt8]]) { self.script = Mutex(script) }

    public var isExhausted: Bool { script.withLock { $0.isEmpty } }

    public func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        try script.withLock { script in
            guard let next = script.first, next.count == buffer.count else { throw CryptoError.randomSourceFailed }
            script.removeFirst()
            buffer.copyBytes(from: next)
        }
    }
}
