import Glibc
import VaultCore
import VaultCrypto
import VaultFileSystem
import VaultStore

/// A file system over a vault in a simulated storage, with a clock that moves only when told
/// and no background commit timer: tests drive `tick(now:)` themselves.
struct FileSystemHarness {
    let storage: SimulatedStorageFolder
    let clock: ManualClock
    let vault: Vault
    let fs: FileSystem
    let caller = Caller(uid: 1000, gid: 1000, umask: 0o022)

    init(storage: SimulatedStorageFolder? = nil, clock: ManualClock = ManualClock(), commitDelay: Double = 5) throws {
        let storage = try storage ?? Self.newStorage()
        self.storage = storage
        self.clock = clock
        vault = try Vault.open(storage: storage, secrets: Self.secrets(), options: Vault.Options(cacheBytes: 8 << 20),
                               clock: clock)
        fs = FileSystem(vault: vault, clock: clock, options: FileSystem.Options(commitDelay: commitDelay, commitTickInterval: nil),
                        capacity: { [storage] in try storage.capacity() })
    }

    static func newStorage() throws -> SimulatedStorageFolder {
        let storage = SimulatedStorageFolder()
        _ = try Storage.addCovers(to: storage, random: SystemRandom())
        return storage
    }

    static func secrets() throws -> VaultSecrets {
        try VaultSecrets(patternKey: SecretBytes(copying: [UInt8](repeating: 7, count: 32)))
    }

    /// The same storage opened again (after `fs.close()`).
    func reopened() throws -> FileSystemHarness { try FileSystemHarness(storage: storage, clock: clock) }

    var root: UInt64 { FileSystem.rootInode }

    @discardableResult
    func createFile(_ name: String, in parent: UInt64 = FileSystem.rootInode, mode: UInt32 = 0o644,
                    contents: [UInt8] = []) throws -> UInt64 {
        let (attributes, handle) = try fs.create(parent, Array(name.utf8), mode: mode, flags: O_CREAT | O_RDWR, caller: caller)
        if !contents.isEmpty { _ = try fs.write(handle, offset: 0, bytes: contents) }
        fs.release(handle)
        return attributes.inode
    }

    func mkdir(_ name: String, in parent: UInt64 = FileSystem.rootInode, mode: UInt32 = 0o755) throws -> UInt64 {
        try fs.makeDirectory(parent, Array(name.utf8), mode: mode, caller: caller).inode
    }

    func lookup(_ name: String, in parent: UInt64 = FileSystem.rootInode) throws -> FileAttributes {
        try fs.lookup(parent, Array(name.utf8))
    }

    func readAll(_ inode: UInt64) throws -> [UInt8] {
        let handle = try fs.open(inode, flags: O_RDONLY, caller: .root)
        defer { fs.release(handle) }
        return try fs.read(handle, offset: 0, count: Int(try fs.attributes(inode).size) + 1)
    }

    func names(_ folder: UInt64) throws -> [String] {
        let handle = try fs.openDirectory(folder)
        defer { fs.releaseDirectory(handle) }
        return try fs.readDirectory(handle, offset: 0, limit: .max).map { String(decoding: $0.name, as: UTF8.self) }
    }

    var commits: Int { vault.statistics.commits }
}

/// Bytes that differ at every position.
func pattern(_ count: Int, seed: UInt64 = 7) -> [UInt8] {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    return (0..<count).map { _ in
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        return UInt8(truncatingIfNeeded: state)
    }
}

extension String {
    var bytes: [UInt8] { Array(utf8) }
}
