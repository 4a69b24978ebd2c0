import CLibCrypto
import Glibc

/// The operating system's CSPRNG, read with `getrandom(2)`.
///
/// The kernel rather than OpenSSL's `RAND_bytes`, because its state is not copied into a forked
/// child and needs no seeding from us; `getrandom` rather than `/dev/urandom` because it needs no
/// file descriptor (none can be exhausted or swapped under us) and blocks only until the pool is
/// first initialised at boot.
///
/// Bulk requests (`bulkThreshold` bytes or more: random file images, cover files) are the
/// AES-256-CTR keystream under a fresh 256-bit key and counter block from `getrandom`, erased
/// when the request is filled. The kernel's generator runs at about 270 MB/s here, AES-CTR at
/// several GB/s; before this, filling new storage files took half of the mount daemon's CPU
/// during a large write (docs/PERFORMANCE.md). Small requests (keys, nonces, salts, names) come
/// from the kernel directly.
public struct SystemRandom: RandomSource {
    public init() {}

    public static let bulkThreshold = 4096

    public func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        guard let start = buffer.baseAddress, buffer.count > 0 else { return }
        guard buffer.count >= Self.bulkThreshold else { return try Self.kernelFill(start, buffer.count) }
        // Key (32 bytes) and counter block (16) live on the stack only while the context is made.
        var seed = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        defer { withUnsafeMutableBytes(of: &seed) { OPENSSL_cleanse($0.baseAddress, $0.count) } }
        let stream = try withUnsafeMutableBytes(of: &seed) { seed in
            try Self.kernelFill(seed.baseAddress!, seed.count)
            return CipherStream(key: seed.baseAddress!, counter: seed.baseAddress! + 32)
        }
        try stream.keystream(into: start.assumingMemoryBound(to: UInt8.self), count: buffer.count)
    }

    private static func kernelFill(_ start: UnsafeMutableRawPointer, _ count: Int) throws {
        var next = start
        var remaining = count
        while remaining > 0 {
            // Requests over 256 bytes may return short, and a signal may interrupt: keep reading.
            let got = getrandom(next, remaining, 0)
            if got < 0 {
                if errno == EINTR { continue }
                throw CryptoError.randomSourceFailed
            }
            if got == 0 { throw CryptoError.randomSourceFailed }  // never seen; avoids a spin
            next += got
            remaining -= got
        }
    }
}
