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
    public init() {}
}

/// Everything a vault holds in memory. Only `Vault` reaches it, through its lock.
struct VaultState {
    let storage: any StorageFolder
    let secrets: VaultSecrets
    let random: any RandomSource
    let clock: any VaultClock
    let readOnly: Bool
    let arena = SecretArena()

    var vaultKey: SecretBytes
    var pageKey: SecretBytes
    /// The committed generation; 0 while the vault has never been written.
    var generation: UInt64
    var nextItemID: UInt64
    var allocator: FileAllocator
    var pageTable: PageTable
    var items: [UInt64: Item] = [:]
    /// Folder → name → item, derived from the items' links.
    var children: [UInt64: [[UInt8]: UInt64]] = [:]
    /// Items whose records must be written at the next commit (also deleted ones).
    var dirtyItems: Set<UInt64> = []
    var dirtySegments: [UInt64: Set<Int>] = [:]
    /// Record keys of items that are gone.
    var removedKeys: [RecordKey] = []
    var packs: [UInt64: PackInfo] = [:]
    var openPack: OpenPack?
    var cache: ChunkCache
    /// Chunks being written behind (ChunkWrite.swift), and each file's sequential run.
    var flights: [ChunkCache.Key: Flight] = [:]
    var nextFlightToken: UInt64 = 0
    var runs: [UInt64: SequentialRun] = [:]
    var groupBeingMade = false
    /// Chunks being loaded outside the lock (ChunkLoad.swift), and where each file's last read ended.
    var loads: [ChunkCache.Key: LoadInProgress] = [:]
    var readEnds: [UInt64: UInt64] = [:]
    /// When the covers last got new bytes in this session, and whether a commit came since.
    var coversRefreshedAt: Int64?
    var committedSinceCoverRefresh = false
    /// A slot whose file is missing though the other opens: made again at the next change.
    var missingSlot: UInt64?
    /// Files written since the last commit: synced before the next root.
    var unsynced: Set<UInt64> = []
    /// Files of released groups that may still exist: in the `releasing` of every root until
    /// they are removed (docs/FORMAT.md §9.2 step 6).
    var releasingFiles: [UInt64] = []
    var createdSinceCommit = false
    var statistics = VaultStatistics()
    var isLocked = false

    static let coverRefreshInterval: Int64 = 30_000_000_000

    var isNew: Bool { generation == 0 }
    var hasChanges: Bool { !dirtyItems.isEmpty || !removedKeys.isEmpty || pageTable.isDirty || cache.hasDirtyEntries || !flights.isEmpty }

    /// A vault that has never been written: a root folder in memory, nothing on disk.
    init(newVaultIn storage: any StorageFolder, secrets: VaultSecrets, random: any RandomSource, clock: any VaultClock,
         readOnly: Bool, cacheBytes: Int, owner: (uid: UInt32, gid: UInt32)) throws {
        self.storage = storage
        self.secrets = secrets
        self.random = random
        self.clock = clock
        self.readOnly = readOnly
        vaultKey = try SecretBytes.random(count: Format.keySize, using: random)
        pageKey = try HKDF.deriveKey(from: vaultKey, salt: [], info: Label.pageKey, count: Format.keySize)
        generation = 0
        nextItemID = Format.rootItemID + 1
        let covers = Format.coverRange.lowerBound + (try random.uniform(Format.coverRange.count))
        allocator = FileAllocator(newVaultWithCovers: UInt8(covers))
        pageTable = PageTable()
        cache = ChunkCache(limitBytes: cacheBytes)
        let now = clock.now()
        let root = ItemRecord(type: .folder, mode: 0o755, uid: owner.uid, gid: owner.gid, atime: now, mtime: now, ctime: now)
        items[Format.rootItemID] = Item(record: root)
        children[Format.rootItemID] = [:]
        // The root folder is written at the first change, not before (R-VLT-2).
    }

    init(storage: any StorageFolder, secrets: VaultSecrets, random: any RandomSource, clock: any VaultClock,
         readOnly: Bool, cacheBytes: Int, root: IndexRoot, vaultKey: SecretBytes) throws {
        self.storage = storage
        self.secrets = secrets
        self.random = random
        self.clock = clock
        self.readOnly = readOnly
        self.vaultKey = vaultKey
        pageKey = try HKDF.deriveKey(from: vaultKey, salt: [], info: Label.pageKey, count: Format.keySize)
        generation = root.generation
        nextItemID = root.nextItemID
        allocator = FileAllocator(newVaultWithCovers: root.coverCount)
        pageTable = PageTable()
        cache = ChunkCache(limitBytes: cacheBytes)
    }

    /// Erases keys and plaintext (R-MEM-3). The state is unusable afterwards.
    mutating func wipe() {
        cache.removeAll()
        flights = [:]
        openPack?.wipe()
        openPack = nil
        arena.wipeAll()
        vaultKey.wipe()
        pageKey.wipe()
        secrets.wipe()
        items = [:]
        children = [:]
        isLocked = true
    }

    func name(_ number: UInt64) throws -> String { try secrets.fileName(number) }
}
