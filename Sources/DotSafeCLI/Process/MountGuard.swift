import Foundation
import SystemCalls
import VaultCrypto
import VaultCore
import VaultFormat
import VaultStore

/// One process per vault at a time (R-FS-3): `mount` and `fsck` hold an exclusive `flock` on a
/// file in the user's private runtime folder, named from the vault's locator and the storage
/// folder's identity, keyed with the boot's key (`RuntimeFolder.lockName`). Only its owner can list that folder; the lock shows in /proc/locks as an
/// inode that is new at every mount (`LockFile`), and nothing is locked in the storage itself.
/// Another user's mount of the same storage is not seen: their runtime folder is their own.
enum MountGuard {
    /// What holds a guard, written into its file by the holder: says where a vault is mounted.
    enum Holder {
        case mount(at: String)
        case fsck
        case sync
        case repattern
        case upgrade

        var note: String {
            switch self {
            case .mount(let mountPoint): "mounted at \(mountPoint)"
            case .fsck: "being checked by dotsafe fsck"
            case .sync: "being synced by dotsafe sync"
            case .repattern: "getting a new pattern from dotsafe repattern"
            case .upgrade: "being upgraded by dotsafe upgrade"
            }
        }
    }

    /// A guard's lock files: in the runtime folder and, where that is another folder, in the
    /// one every environment of this user finds (`RuntimeFolder.everyEnvironment`): two
    /// daemons on one vault, each with its own XDG_RUNTIME_DIR, lost synced files and damaged it.
    final class Held: Sendable {
        private let files: [LockFile]
        init(_ files: [LockFile]) { self.files = files }
        func release() { files.forEach { $0.release() } }
    }

    /// Takes the guard for `holder`, or throws `whenHeld` with the holder's note ("mounted at
    /// …") when another process has it (the secrets are wiped).
    /// A vault opened through a grant (`sharedBy`) has a guard of its own, apart from the
    /// pattern's own vault.
    static func take(_ secrets: VaultSecrets, storage: DiskStorageFolder, folder: RuntimeFolder, for holder: Holder,
                     sharedBy: ContactCode? = nil, whenHeld message: (String) -> String) throws -> Held {
        var files: [LockFile] = []
        var heldNote: String?
        do {
            let identity = try storage.identity()
            let vaultName = try secrets.mountGuardName(storageDevice: identity.device, storageInode: identity.inode)
            for folder in [folder] + [RuntimeFolder.everyEnvironment(besides: folder)].compactMap({ $0 }) {
                let path = folder.file(try folder.lockName("guard-", for: Array(vaultName.utf8) + (sharedBy?.publicKey ?? [])))
                guard let file = try LockFile.take(path) else {
                    heldNote = LockFile.note(at: path) ?? "in use"
                    break
                }
                file.note(holder.note)
                files.append(file)
            }
        } catch {
            files.forEach { $0.release() }
            secrets.wipe()
            throw CLIError.failure("cannot take the mount guard: \(error)")
        }
        guard let heldNote else { return Held(files) }
        files.forEach { $0.release() }
        secrets.wipe()
        throw CLIError.failure(message(heldNote))
    }

    /// One daemon per mount point: a lock file named from the mount point (in the private folder).
    static func takeMountPoint(_ mountPoint: String, folder: RuntimeFolder) throws -> LockFile {
        let held: LockFile?
        do { held = try LockFile.take(folder.file(try folder.lockName("point-", for: Array(mountPoint.utf8)))) } catch {
            throw CLIError.failure("cannot take the mount point's lock: \(error)")
        }
        guard let held else { throw CLIError.failure("mount point \(mountPoint) is served by another dotsafe") }
        return held
    }
}
