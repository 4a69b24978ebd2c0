import Foundation
import Glibc
import Testing
import VaultCore
import VaultCrypto
import VaultFileSystem
import VaultFUSE
import VaultStore

/// `.inProcess` mode: the vault mounted with `FUSEMount` in this process, with fixed secrets.
extension MountHarness {
    /// The secrets of every in-process mount: a fixed pattern key (no PBKDF2, so it is fast).
    public static func secrets() throws -> VaultSecrets {
        try VaultSecrets(patternKey: SecretBytes(copying: [UInt8](repeating: 0x5A, count: 32)))
    }

    func initialiseInProcess() throws {
        try Storage.initialize(at: storage, random: SystemRandom())
    }

    /// Opens the vault, mounts it at `mountPoint`, runs `body` with the mount, and unmounts in all
    /// cases (lazily when `body` failed); fails the test if the mount is left behind.
    @discardableResult
    public func withMount<R>(at mountPoint: String, options: FUSEMount.Options = FUSEMount.Options(), commitDelay: Double = 5,
                             sourceLocation: SourceLocation = #_sourceLocation,
                             _ body: (FUSEMount) throws -> R) throws -> R {
        precondition(mode == .inProcess, "withMount mounts in-process: make the harness with MountHarness(.inProcess)")
        let folder = try DiskStorageFolder(path: storage)
        let vault = try Vault.open(storage: folder, secrets: Self.secrets(), options: Vault.Options(owner: (getuid(), getgid())))
        let fileSystem = FileSystem(vault: vault, options: FileSystem.Options(commitDelay: commitDelay),
                                    capacity: { [folder] in try folder.capacity() })
        let mount: FUSEMount
        do {
            mount = try FUSEMount.mount(fileSystem, at: mountPoint, options: options)
        } catch {
            try? fileSystem.close()
            throw error
        }
        _ = mounted.withLock { $0.insert(mountPoint) }
        var unmounted = false
        defer {
            if !unmounted {
                // The body failed: get rid of the mount whatever holds it.
                try? mount.unmount(lazy: true)
            }
            #expect(Self.waitUntil(mounted: false, mountPoint), "a mount was left at \(mountPoint)", sourceLocation: sourceLocation)
            _ = mounted.withLock { $0.remove(mountPoint) }
        }
        let result = try body(mount)
        try mount.unmount()
        unmounted = true
        return result
    }
}
