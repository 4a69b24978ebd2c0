import Glibc

/// Failures of the storage folder. Each case names the errno a file system turns it into.
public enum StoreError: Error, Equatable, Sendable {
    /// The folder is not a DotSafe storage (EINVAL at mount).
    case notAStorage(String)
    /// `init` on a folder that has something in it.
    case folderNotEmpty(String)
    /// A new storage's folder cannot be made: the folder it would go in does not exist (ENOENT).
    case parentMissing(String)
    /// A file at a name the vault expects is not a regular file of the storage size (EIO).
    case unusableFile(String)
    /// The disk is full (ENOSPC).
    case noSpace
    /// A name that should be new exists already (EEXIST).
    case exists(String)
    /// Any other system call failure, with its errno (passed through).
    case system(operation: String, errno: Int32)
    /// A test storage stopped accepting writes, as a crash would.
    case simulatedCrash

    /// The errno the file system layer returns for this failure.
    public var errno: Int32 {
        switch self {
        case .notAStorage: EINVAL
        case .folderNotEmpty: ENOTEMPTY
        case .parentMissing: ENOENT
        case .unusableFile: EIO
        case .noSpace: ENOSPC
        case .exists: EEXIST
        case .system(_, let code): code
        case .simulatedCrash: EIO
        }
    }

    static func fromErrno(_ operation: String, _ code: Int32) -> StoreError {
        code == ENOSPC || code == EDQUOT ? .noSpace : .system(operation: operation, errno: code)
    }
}

extension StoreError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .notAStorage(let why): "not a DotSafe storage: \(why)"
        case .folderNotEmpty(let path): "\(path) is not empty"
        case .parentMissing(let path):
            "cannot make the storage folder \(path): the folder it goes in does not exist (a typo? make it first); nothing was changed"
        case .unusableFile(let name): "storage file \(name) is not a regular file of the storage size"
        case .noSpace: "no space left on the storage's disk"
        case .exists(let name): "storage file \(name) exists already"
        case .system(let operation, let code): "\(operation): \(String(cString: strerror(code)))"
        case .simulatedCrash: "simulated crash"
        }
    }
}
