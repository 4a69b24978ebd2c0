import VaultCore
import VaultStore

/// One process per vault at a time (R-FS-3): `mount` and `fsck` hold an abstract Unix socket
/// named from the vault's locator and the storage folder's identity. It leaves no file anywhere
/// and goes away with the process that holds it.
enum MountGuard {
    /// Takes the guard, or throws `whenHeld` when another process has it (the secrets are wiped).
    static func take(_ secrets: VaultSecrets, storage: DiskStorageFolder, whenHeld message: String) throws -> UnixSocket {
        let identity = try storage.identity()
        let name = try secrets.mountGuardName(storageDevice: identity.device, storageInode: identity.inode)
        do { return try UnixSocket.listen(name) } catch {
            secrets.wipe()
            throw CLIError.failure(error == .inUse ? message : "cannot take the mount guard: \(error)")
        }
    }
}
