/// The one error type of the crypto layer.
///
/// Cases are coarse on purpose: callers map them to an errno (noted per case) and must not be able
/// to learn from an error *why* a ciphertext was rejected.
public enum CryptoError: Error, Equatable, Sendable {
    /// An AEAD check failed. Deliberately says nothing about which input was wrong (key, nonce,
    /// ciphertext, tag or associated data), so a failure is no oracle. Becomes `EIO`.
    case authenticationFailed
    /// The random source failed. Distinct from `.library` so that callers, and tests using
    /// `FailingRandom`, can tell "no entropy" from a bug. Becomes `EIO`.
    case randomSourceFailed
    /// A key of the wrong length was handed in: a programmer error caught before OpenSSL sees it.
    /// Becomes `EINVAL`.
    case invalidKeySize(expected: Int, actual: Int)
    /// Any other malformed argument (nonce length, public key length, output size out of range).
    /// Becomes `EINVAL`.
    case invalidInput(String)
    /// An X25519 exchange produced the all-zero secret, i.e. the peer sent a low-order point.
    /// Accepting it would let the peer fix the shared key. Becomes `EINVAL`.
    case weakSharedSecret
    /// Reserved for callers that must refuse to run with unlocked key memory. `SecretBytes` and
    /// `SecretArena` never throw it: a failed `mlock` (RLIMIT_MEMLOCK) is recorded in `isLocked`
    /// instead, because refusing to mount is worse than a key that could reach swap. Becomes `ENOMEM`.
    case memoryLockFailed
    /// OpenSSL (or the kernel) failed where it should not; carries the failing function's name
    /// for the log. Never carries key material. Becomes `EIO`.
    case library(String)
}
