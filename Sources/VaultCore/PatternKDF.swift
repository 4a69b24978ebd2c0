import VaultCrypto
import VaultFormat

/// How a pattern becomes the pattern key (docs/FORMAT.md §2.2, §8.1): PBKDF2-HMAC-SHA256, the
/// default, or scrypt, which also makes each guess cost memory. The parameters travel with the
/// salt in the keyring as attributes.
public enum PatternKDF: Equatable, Sendable, CustomStringConvertible {
    case pbkdf2(rounds: Int)
    case scrypt(n: UInt64, r: UInt32, p: UInt32)

    public static let pbkdf2Name = "pbkdf2-hmac-sha256"
    public static let scryptName = "scrypt"
    /// The default: the seed's PBKDF2 with 600,000 rounds.
    public static let standard = PatternKDF.pbkdf2(rounds: Format.minimumKDFRounds)
    /// scrypt with 64 MiB: about as long per guess as PBKDF2-600k on the machine it was tuned on
    /// (README, "Choosing a key derivation").
    public static let standardScrypt = PatternKDF.scrypt(n: 1 << 16, r: 8, p: 1)
    /// Less memory than this is weak (R-KEY-5): refused unless `DOTSAFE_ALLOW_WEAK_KDF=1`.
    public static let minimumScryptMemory = Scrypt.memory(n: 1 << 16, r: 8)

    /// Below the minimum (R-KEY-5): a planted keyring must not silently make guessing cheaper.
    public var isWeak: Bool {
        switch self {
        case .pbkdf2(let rounds): rounds < Format.minimumKDFRounds
        case .scrypt(let n, let r, _): Scrypt.memory(n: n, r: UInt64(r)) < Self.minimumScryptMemory
        }
    }

    /// The 32-byte pattern key, from a password in locked memory (the pattern's canonical bytes).
    public func deriveKey(password: SecretBytes, salt: [UInt8]) throws -> SecretBytes {
        switch self {
        case .pbkdf2(let rounds):
            try PBKDF2.deriveKey(password: password, salt: salt, rounds: rounds, count: Format.keySize)
        case .scrypt(let n, let r, let p):
            try Scrypt.deriveKey(password: password, salt: salt, n: n, r: r, p: p, count: Format.keySize)
        }
    }

    /// The keyring attributes that record it (docs/FORMAT.md §8.1).
    public var attributes: [(name: String, value: String)] {
        switch self {
        case .pbkdf2(let rounds): [("kdf", Self.pbkdf2Name), ("rounds", String(rounds))]
        case .scrypt(let n, let r, let p): [("kdf", Self.scryptName), ("N", String(n)), ("r", String(r)), ("p", String(p))]
        }
    }

    /// Reads the attributes back; throws when one is unknown, missing or out of range.
    public init(attributes item: KeyringFile.Item) throws(KDFAttributeError) {
        let kdf = item.attribute("kdf") ?? ""
        switch kdf {
        case Self.pbkdf2Name:
            guard let rounds = Int(item.attribute("rounds") ?? ""), rounds > 0, rounds <= Int(Int32.max) else {
                throw .invalid("the pattern salt has no valid round count")
            }
            self = .pbkdf2(rounds: rounds)
        case Self.scryptName:
            guard let n = UInt64(item.attribute("N") ?? ""), n > 1, n & (n - 1) == 0,
                  let r = UInt32(item.attribute("r") ?? ""), r >= 1,
                  let p = UInt32(item.attribute("p") ?? ""), p >= 1, p <= 16 else {
                throw .invalid("the pattern salt has no valid scrypt parameters (N a power of two, r and p from 1)")
            }
            guard Scrypt.memory(n: n, r: UInt64(r)) <= Scrypt.maximumMemory else {
                throw .invalid("its scrypt parameters ask for more than \(Scrypt.maximumMemory >> 30) GiB of memory")
            }
            self = .scrypt(n: n, r: r, p: p)
        default:
            throw .unknown(kdf)
        }
    }

    public var description: String {
        switch self {
        case .pbkdf2(let rounds): "PBKDF2-HMAC-SHA256, \(rounds) rounds"
        case .scrypt(let n, let r, let p): "scrypt, N \(n), r \(r), p \(p) (\(Scrypt.memory(n: n, r: UInt64(r)) >> 20) MiB)"
        }
    }
}

/// Why a keyring's KDF attributes were not accepted.
public enum KDFAttributeError: Error, Equatable {
    case unknown(String)
    case invalid(String)
}
