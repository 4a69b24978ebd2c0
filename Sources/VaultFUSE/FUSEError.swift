import Glibc
import VaultFileSystem

/// Failures of mounting and unmounting.
public enum FUSEError: Error, Equatable, Sendable {
    /// libfuse refused the options (a bug, or an option this libfuse does not know).
    case invalidOptions(String)
    /// The kernel or fusermount3 refused the mount: no /dev/fuse, not a folder, not permitted.
    /// `reason`: the last line libfuse or fusermount3 wrote on standard error, if any.
    case mountFailed(String, reason: String? = nil)
    /// The loop thread could not start (errno).
    case threadFailed(Int32)
    /// Something still uses the mount (an open file, a working directory): EBUSY.
    case busy(String)
    /// The kernel mount could not be removed (errno, or fusermount3's exit status).
    case unmountFailed(String)
    /// The file system's final commit failed: changes since the last commit may be lost.
    case closeFailed(FSError)
}

extension FUSEError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .invalidOptions(let options): "libfuse rejected the mount options '\(options)'"
        case .mountFailed(let path, let reason?): "cannot mount at \(path): \(reason)"
        case .mountFailed(let path, nil): "cannot mount at \(path): is /dev/fuse there, and may this user open it?"
        case .threadFailed(let code): "cannot start the FUSE thread: \(String(cString: strerror(code)))"
        case .busy(let path): "\(path) is busy: close the files and leave the folders open in it, then unmount again"
        case .unmountFailed(let why): "cannot unmount: \(why)"
        case .closeFailed(let error): "the last changes could not be written: \(error)"
        }
    }
}
