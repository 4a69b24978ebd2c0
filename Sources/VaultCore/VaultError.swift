import Glibc
import VaultCrypto
import VaultFormat
import VaultStore

/// Failures of the vault. Each case says the errno the file system returns for it.
public enum VaultError: Error, Equatable, Sendable {
    /// Something is at the vault's index name but does not open (EIO; a mount refuses).
    case damagedIndex(String)
    /// Made by a newer DotSafe (EIO at mount, with this message).
    case newerFormat(UInt8)
    /// A block, page or member failed to open: tampered, rolled back, foreign or lost (EIO).
    case damagedData(String)
    /// No such item or name (ENOENT).
    case notFound
    /// The name exists in that folder (EEXIST).
    case exists
    /// An operation on the wrong kind of item (EINVAL).
    case wrongType
    /// A folder was expected (ENOTDIR).
    case notAFolder
    /// Not allowed on a folder (EISDIR).
    case isAFolder
    /// The folder has something in it (ENOTEMPTY).
    case notEmpty
    /// A folder cannot move into itself (EINVAL).
    case invalidMove
    /// A limit of the format: name too long, record or index too large (ENAMETOOLONG / E2BIG / EFBIG).
    case tooLarge(String)
    /// The vault was opened read-only (EROFS).
    case readOnly
    /// The vault is locked: keys erased (EIO).
    case locked
    case store(StoreError)
    case crypto(CryptoError)

    public var errno: Int32 {
        switch self {
        case .damagedIndex, .newerFormat, .damagedData, .locked: EIO
        case .notFound: ENOENT
        case .exists: EEXIST
        case .wrongType, .invalidMove: EINVAL
        case .notAFolder: ENOTDIR
        case .isAFolder: EISDIR
        case .notEmpty: ENOTEMPTY
        case .tooLarge: EFBIG
        case .readOnly: EROFS
        case .store(let error): error.errno
        case .crypto(.randomSourceFailed): EIO
        case .crypto: EIO
        }
    }

    /// Wraps lower-layer errors so callers see one type.
    static func wrap(_ error: any Error) -> VaultError {
        switch error {
        case let error as VaultError: error
        case let error as StoreError: .store(error)
        case let error as CryptoError: .crypto(error)
        case let error as FormatError:
            if case .newerVersion(let version) = error { .newerFormat(version) } else { .damagedData(error.description) }
        default: .damagedData("\(error)")
        }
    }
}

extension VaultError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .damagedIndex(let why): "the vault's index is damaged: \(why); nothing was changed"
        case .newerFormat(let version): "the vault was made by a newer DotSafe (format version \(version)); update DotSafe to open it"
        case .damagedData(let what): "damaged data: \(what)"
        case .notFound: "no such item"
        case .exists: "the name exists already"
        case .wrongType: "wrong kind of item"
        case .notAFolder: "not a folder"
        case .isAFolder: "is a folder"
        case .notEmpty: "the folder is not empty"
        case .invalidMove: "a folder cannot move into itself"
        case .tooLarge(let what): "too large: \(what)"
        case .readOnly: "the vault is open read-only"
        case .locked: "the vault is locked"
        case .store(let error): error.description
        case .crypto(let error): "\(error)"
        }
    }
}
