import Glibc
import VaultCore

/// Failures of the file system. Each case names the errno that the FUSE adapter replies with.
public enum FSError: Error, Equatable, Sendable {
    /// No such name or inode (ENOENT).
    case notFound
    /// The name exists already, or RENAME_NOREPLACE found a target (EEXIST).
    case exists
    /// A folder was expected (ENOTDIR).
    case notADirectory
    /// Not allowed on a folder (EISDIR).
    case isADirectory
    /// rmdir or rename over a folder that has entries (ENOTEMPTY).
    case notEmpty
    /// A bad argument: a folder moved into itself, an unsupported flag or type, an extended
    /// attribute name that is only a namespace (`user.`) (EINVAL).
    case invalidArgument
    /// A name longer than 255 bytes, or a link target longer than the format allows (ENAMETOOLONG).
    case nameTooLong
    /// No extended attribute of that name (ENODATA).
    case noAttribute
    /// An extended attribute name that is empty or too long (ERANGE).
    case attributeNameOutOfRange
    /// An extended attribute value too large for the kernel (E2BIG).
    case attributeTooLarge
    /// No room: the item's extended attributes are full, or the disk is (ENOSPC).
    case noSpace
    /// Past the largest file the format can address (EFBIG).
    case fileTooLarge
    /// Too many hard links to one item (EMLINK).
    case tooManyLinks
    /// An unknown file handle, or one not opened for this (EBADF).
    case badHandle
    /// The vault is open read-only (EROFS).
    case readOnly
    /// Not permitted: a hard link to a folder (EPERM).
    case notPermitted
    /// Not supported: POSIX ACLs, SELinux labels, extended attributes of a namespace ext4 does
    /// not know (EOPNOTSUPP). (An unsupported rename flag, RENAME_EXCHANGE among
    /// them, is EINVAL, as the kernel answers for a FUSE server without rename2.)
    case notSupported
    /// SEEK_DATA or SEEK_HOLE from the end of the file or past it, or SEEK_DATA with no data
    /// after the offset (ENXIO).
    case noSuchOffset
    /// Anything the vault or the storage reported: damaged data (EIO), a full disk (ENOSPC), a
    /// locked vault (EIO); the errno is the vault's.
    case vault(VaultError)

    public var errno: Int32 {
        switch self {
        case .notFound: ENOENT
        case .exists: EEXIST
        case .notADirectory: ENOTDIR
        case .isADirectory: EISDIR
        case .notEmpty: ENOTEMPTY
        case .invalidArgument: EINVAL
        case .nameTooLong: ENAMETOOLONG
        case .noAttribute: ENODATA
        case .attributeNameOutOfRange: ERANGE
        case .attributeTooLarge: E2BIG
        case .noSpace: ENOSPC
        case .fileTooLarge: EFBIG
        case .tooManyLinks: EMLINK
        case .badHandle: EBADF
        case .readOnly: EROFS
        case .notPermitted: EPERM
        case .notSupported: EOPNOTSUPP
        case .noSuchOffset: ENXIO
        case .vault(let error): error.errno
        }
    }

    /// How an operation reads the vault's generic cases: what a missing item or a format limit
    /// means depends on what was asked (ENODATA for an attribute, EMLINK for a link, …).
    struct Context {
        var notFound: FSError = .notFound
        var tooLarge: FSError = .fileTooLarge
        var isAFolder: FSError = .isADirectory
        var wrongType: FSError = .invalidArgument

        static let general = Context()
    }

    /// Translates any error thrown below the file system.
    init(_ error: any Error, _ context: Context = .general) {
        switch error {
        case let error as FSError:
            self = error
        case let error as VaultError:
            switch error {
            case .notFound: self = context.notFound
            case .exists: self = .exists
            case .wrongType: self = context.wrongType
            case .notAFolder: self = .notADirectory
            case .isAFolder: self = context.isAFolder
            case .notEmpty: self = .notEmpty
            case .invalidMove: self = .invalidArgument
            case .tooLarge: self = context.tooLarge
            case .readOnly: self = .readOnly
            case .store(let store) where store.errno == ENOSPC: self = .noSpace
            default: self = .vault(error)
            }
        default:
            self = .vault(.damagedData("\(error)"))
        }
    }
}

extension FSError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .vault(let error): error.description
        default: String(cString: strerror(errno))
        }
    }
}
