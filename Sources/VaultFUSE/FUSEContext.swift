import CFuse
import VaultFileSystem

/// What every request reaches through `fuse_req_userdata`: the file system and the cache
/// timeouts the replies carry. Immutable, so the libfuse threads share it freely.
final class FUSEContext: Sendable {
    let fileSystem: FileSystem
    /// Seconds the kernel may cache attributes and names. Every change comes through this mount,
    /// so the kernel's view is never stale for long; one second keeps O_APPEND sizes honest.
    let attributeTimeout: Double
    let entryTimeout: Double
    let cacheFill = KernelCacheFill()
    let device = FUSEDevice.State()

    init(fileSystem: FileSystem, attributeTimeout: Double, entryTimeout: Double) {
        self.fileSystem = fileSystem
        self.attributeTimeout = attributeTimeout
        self.entryTimeout = entryTimeout
    }

    /// The context of a request (the userdata given to `fuse_session_new`).
    static func of(_ request: fuse_req_t?) -> FUSEContext {
        Unmanaged<FUSEContext>.fromOpaque(fuse_req_userdata(request)!).takeUnretainedValue()
    }
}
