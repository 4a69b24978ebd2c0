import VaultCrypto

/// Fills nothing: violates the RandomSource contract on purpose, so that a new arena slot shows
/// what its memory held before (which must be zeros after `free`/`wipeAll`).
public struct NoFillRandom: RandomSource {
    public init() {}
    public func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {}
}
