/// A random source that always fails, so tests can check that a failed generation surfaces as
/// `CryptoError.randomSourceFailed` instead of, say, an all-zero key.
public struct FailingRandom: RandomSource {
    public init() {}

    public func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        throw CryptoError.randomSourceFailed
    }
}
