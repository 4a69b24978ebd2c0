import CLibCrypto
import Glibc

/// The operating system's CSPRNG, read with `getrandom(2)`.
///
/// The kernel rather than OpenSSL's `RAND_bytes`, because its state is not copied into a forked
/// child and needs no seeding from us; `getrandom` rather than `/dev/urandom` because it needs no
/// file descriptor (none can be exhausted or swapped under us) and blocks only until the pool is
/// first initialised at boot.
public struct SystemRandom: RandomSource {
    public init() {}

    public func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        guard var next = buffer.baseAddress else { return }
        var remaining = buffer.count
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
