import VaultCrypto
import VaultFormat

/// The paper backup (docs/FORMAT.md §8.3): the pattern salt and its KDF as a recovery code. The
/// salt alone opens nothing; with it, a pattern can be guessed offline, so the paper is kept
/// like the storage's backups.
extension Keyring {
    /// The recovery code's groups for this keyring's pattern salt.
    public func recoveryCode() throws -> [String] {
        guard let salt = try patternSalt() else { throw KeyringError.missing(backend.place) }
        let kdf: RecoveryCode.KDF
        switch salt.kdf {
        case .pbkdf2(let rounds):
            kdf = .pbkdf2(rounds: UInt32(rounds))
        case .scrypt(let n, let r, let p):
            guard r <= UInt32(UInt8.max) else { throw KeyringError.storage("scrypt r \(r) does not fit a recovery code (at most 255)") }
            kdf = .scrypt(log2N: UInt8(n.trailingZeroBitCount), r: UInt8(r), p: UInt8(p))
        }
        return RecoveryCode(kdf: kdf, salt: salt.salt).encode(hash: SHA256.hash)
    }

    /// Adds the pattern salt a recovery code holds. The same salt again changes nothing (false);
    /// a different one is refused unless `replace`, since vaults made with it would look empty.
    @discardableResult
    public func importRecoveryCode(_ text: String, replace: Bool = false) throws -> Bool {
        let code: RecoveryCode
        do { code = try RecoveryCode.decode(text, hash: SHA256.hash) } catch { throw KeyringError.storage(error.description) }
        let kdf: PatternKDF
        switch code.kdf {
        case .pbkdf2(let rounds): kdf = .pbkdf2(rounds: Int(rounds))
        case .scrypt(let log2N, let r, let p):
            guard (1..<64).contains(log2N) else { throw KeyringError.storage(RecoveryCode.Failure.invalid("scrypt N 2^\(log2N)").description) }
            kdf = .scrypt(n: 1 << UInt64(log2N), r: UInt32(r), p: UInt32(p))
        }
        let item = KeyringFile.Item(tag: Self.patternSaltTag, attributes: kdf.attributes, secret: code.salt)
        // The same checks as a salt read from a keyring: the code may come from anyone.
        do { _ = try PatternKDF(attributes: item) } catch {
            throw KeyringError.storage(RecoveryCode.Failure.invalid("its key derivation parameters are out of range").description)
        }
        guard !kdf.isWeak || allowWeakKDF else { throw KeyringError.weakKDF(kdf) }
        return try !merge([item], replace: replace).isEmpty
    }
}
