/// Where every random byte in DotSafe comes from (keys, nonces, salts, padding, file names).
///
/// A protocol so that tests can make generation reproducible (`DeterministicRandom`, for vectors
/// a second implementation can check) or fail on demand (`FailingRandom`); production code takes
/// `SystemRandom` as the default argument.
public protocol RandomSource: Sendable {
    /// Fills the buffer or throws CryptoError.randomSourceFailed.
    func fill(_ buffer: UnsafeMutableRawBufferPointer) throws
}

extension RandomSource {
    /// `count` random bytes in an ordinary array: for public values (nonces, salts, names), not keys.
    public func bytes(_ count: Int) throws -> [UInt8] {
        guard count >= 0 else { throw CryptoError.invalidInput("negative byte count \(count)") }
        return try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            try fill(UnsafeMutableRawBufferPointer(buffer))
            initialized = count
        }
    }

    /// A uniformly distributed integer in `0..<upperBound`.
    ///
    /// `random % n` alone favours small values whenever `n` does not divide 2^64, so draws below
    /// `2^64 mod n` are rejected and redrawn (the arc4random_uniform method); fewer than one draw
    /// in two is rejected for any `n`. Each draw consumes 8 bytes, read little-endian, which fixes
    /// the results for a given `DeterministicRandom` stream.
    public func uniform(_ upperBound: Int) throws -> Int {
        guard upperBound > 0 else { throw CryptoError.invalidInput("uniform upper bound \(upperBound) must be positive") }
        let bound = UInt64(upperBound)
        let rejectBelow = (0 &- bound) % bound  // == 2^64 mod bound
        while true {
            var draw: UInt64 = 0
            try withUnsafeMutableBytes(of: &draw) { try fill($0) }
            draw = UInt64(littleEndian: draw)
            if draw >= rejectBelow { return Int(draw % bound) }
        }
    }
}
