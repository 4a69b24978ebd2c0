import VaultCrypto
import VaultFormat
import VaultStore

/// Counts of what the vault did to blocks: tests assert them (I/O-count tests).
public struct VaultStatistics: Equatable, Sendable {
    public var chunkDecrypts = 0
    public var chunkEncrypts = 0
    public var memberDecrypts = 0
    public var memberEncrypts = 0
    public var pageWrites = 0
    public var commits = 0
    public var coverRefreshes = 0
    /// Freed files written over with random bytes (docs/FORMAT.md §9.2 step 6).
    public var refilledFiles = 0
    public init() {}
}

/// Everything a vault holds in memory. Only `Vault` reaches it, through its lock. Each part owns
/// its state and its rules (docs/ARCHITECTURE.md, "Inside the vault"); the extensions of this
/// type are the operations that span parts: contents, write-behind, loads, the commit.
struct VaultState {
    let secrets: VaultSecrets
    let random: any RandomSource
    let clock: any VaultClock
    let readOnly: Bool
    /// Item keys, in locked memory.
    let arena: SecretArena
    var tree: ItemTree
    var chunks: ChunkStore
    var packs: PackStore
    var writer: FileWriter
    var committer: Committer
    var statistics = VaultStatistics()
    var isLocked = false

    var storage: any StorageFolder { writer.storage }
    var isNew: Bool { committer.isNew }
    var hasChanges: Bool { tree.hasChanges || committer.hasChanges || chunks.hasChanges }
    /// Whether a write-behind has not finished: a commit waits for it.
    var writingBehind: Bool { chunks.hasFlights || writer.groupBeingMade }

    /// A vault that has never been written: a root folder in memory, nothing on disk.
    init(newVaultIn storage: any StorageFolder, secrets: VaultSecrets, random: any RandomSource, clock: any VaultClock,
         readOnly: Bool, cacheBytes: Int, owner: (uid: UInt32, gid: UInt32)) throws {
        self.secrets = secrets
        self.random = random
        self.clock = clock
        self.readOnly = readOnly
        arena = SecretArena()
        committer = try Committer(vaultKey: try SecretBytes.random(count: Format.keySize, using: random), generation: 0)
        let covers = Format.coverRange.lowerBound + (try random.uniform(Format.coverRange.count))
        writer = FileWriter(storage: storage, secrets: secrets, random: random, allocator: FileAllocator(newVaultWithCovers: UInt8(covers)))
        packs = PackStore()
        chunks = ChunkStore(cacheBytes: cacheBytes)
        let now = clock.now()
        // The root folder is written at the first change, not before (R-VLT-2).
        tree = ItemTree(root: ItemRecord(type: .folder, mode: 0o755, uid: owner.uid, gid: owner.gid, atime: now, mtime: now, ctime: now))
    }

    /// A vault read from its root and index (`IndexContents` has checked them).
    init(storage: any StorageFolder, secrets: VaultSecrets, random: any RandomSource, clock: any VaultClock, readOnly: Bool,
         cacheBytes: Int, root: IndexRoot, committer: Committer, contents: IndexContents, arena: SecretArena) {
        self.secrets = secrets
        self.arena = arena
        self.random = random
        self.clock = clock
        self.readOnly = readOnly
        self.committer = committer
        writer = FileWriter(storage: storage, secrets: secrets, random: random,
                            allocator: FileAllocator(root: root, used: contents.usedFiles))
        packs = PackStore(packs: contents.packs)
        chunks = ChunkStore(cacheBytes: cacheBytes)
        tree = ItemTree(items: contents.items, children: contents.children, nextItemID: root.nextItemID)
    }

    /// Erases keys and plaintext (R-MEM-3). The state is unusable afterwards.
    mutating func wipe() {
        chunks.removeAll()
        packs.wipe()
        arena.wipeAll()
        committer.wipe()
        secrets.wipe()
        tree.removeAll()
        isLocked = true
    }

    func name(_ number: UInt64) throws -> String { try secrets.fileName(number) }

    func checkWritable() throws {
        guard !readOnly else { throw VaultError.readOnly }
    }
}
