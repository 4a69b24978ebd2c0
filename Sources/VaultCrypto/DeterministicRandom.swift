import CLibCrypto
import Synchronization

/// A reproducible byte stream, for test vectors that a second implementation can regenerate.
///
/// Exact definition: the AES-256-CTR keystream, i.e. the AES-256-CTR encryption of zero bytes,
/// with key = `seed` (exactly 32 bytes) and initial counter block = 16 zero bytes, the counter being
/// the whole 16-byte block incremented as a big-endian integer (OpenSSL `EVP_aes_256_ctr`). Block
/// `i` of the stream is therefore AES-256-Encrypt(seed, i as a 128-bit big-endian integer).
/// Successive `fill` calls continue the stream where the previous one stopped, at byte
/// granularity, so `fill(10)` then `fill(22)` yields the same 32 bytes as one `fill(32)`.
/// Equivalent command: `openssl enc -aes-256-ctr -K <seed hex> -iv 00000000000000000000000000000000`
/// over `/dev/zero`.
///
/// Thread-safe: the cipher state sits behind a `Mutex`, so concurrent callers each get distinct
/// consecutive pieces of the one stream (in an order that is then up to the scheduler).
///
/// Never use it for real keys: anyone with the seed has every byte.
public final class DeterministicRandom: RandomSource {
    private let stream: Mutex<CipherStream>

    /// `seed` must be 32 bytes: a wrong length is a programmer error and traps.
    public init(seed: [UInt8]) {
        precondition(seed.count == 32, "DeterministicRandom seed must be 32 bytes, got \(seed.count)")
        stream = Mutex(CipherStream(key: seed))
    }

    public func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        guard let start = buffer.baseAddress, buffer.count > 0 else { return }
        let output = OutputBuffer(start: start.assumingMemoryBound(to: UInt8.self), count: buffer.count)
        try stream.withLock { try $0.keystream(into: output.start, count: output.count) }
    }
}

/// The caller's buffer, carried into the lock.
/// `@unchecked Sendable` holds because `fill` does not return until the closure using it has run,
/// so the buffer is still the caller's and is not touched by anyone else meanwhile.
private struct OutputBuffer: @unchecked Sendable {
    let start: UnsafeMutablePointer<UInt8>
    let count: Int
}

/// One AES-256-CTR context, freed (and cleansed by OpenSSL) with its owner.
struct CipherStream: ~Copyable {
    private let context: OpaquePointer

    /// `key` is 32 bytes and `counter` 16 (the initial counter block).
    init(key: UnsafeRawPointer, counter: UnsafeRawPointer) {
        guard let context = EVP_CIPHER_CTX_new() else { fatalError("EVP_CIPHER_CTX_new failed") }
        let ok = EVP_EncryptInit_ex(context, EVP_aes_256_ctr(), nil, key.assumingMemoryBound(to: UInt8.self),
                                    counter.assumingMemoryBound(to: UInt8.self))
        guard ok == 1 else { fatalError("EVP_EncryptInit_ex(AES-256-CTR) failed") }
        self.context = context
    }

    init(key: [UInt8]) {
        let zeroCounter = [UInt8](repeating: 0, count: 16)
        self.init(key: key, counter: zeroCounter)
    }

    /// Overwrites `count` bytes with the next keystream bytes (zeroes encrypted in place).
    func keystream(into out: UnsafeMutablePointer<UInt8>, count: Int) throws {
        out.initialize(repeating: 0, count: count)
        var done = 0
        while done < count {
            let step = min(count - done, 1 << 30)
            var written: Int32 = 0
            try OpenSSLCall.check(EVP_EncryptUpdate(context, out + done, &written, out + done, Int32(step)),
                                  "EVP_EncryptUpdate")
            guard Int(written) == step else { throw OpenSSLCall.failure("EVP_EncryptUpdate") }
            done += step
        }
    }

    deinit { EVP_CIPHER_CTX_free(context) }
}
