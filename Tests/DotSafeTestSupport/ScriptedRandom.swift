import Synchronization
import VaultCrypto

/// Hands out fixed bytes as one stream, in order: drives `uniform` through its rejection branch.
public final class ScriptedRandom: RandomSource {
    private let script: [UInt8]
    private let position = Mutex(0)

    public init(_ script: [UInt8]) { self.script = script }

    public var consumed: Int { position.withLock { $0 } }

    public func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        try position.withLock { position in
            guard position + buffer.count <= script.count else { throw CryptoError.randomSourceFailed }
            for i in 0..<buffer.count { buffer[i] = script[position + i] }
            position += buffer.count
        }
    }
}

/// 8 bytes, little-endian, as `uniform` reads a draw.
public func littleEndianBytes(_ value: UInt64) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
}
