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
    /// Names hashed for index 3's folder entries at commits: the names changed, not every name.
    public var entryHashes = 0
    /// Items whose files commits looked at for index 3's file blocks: those changed, not all.
    public var fileRecordItems = 0
    /// Index leaves loaded after the open (pages on demand, `VaultState.fault`).
    public var leafLoads = 0
    /// Index leaves unloaded to keep within the budget (`Vault.Options.indexCacheLeaves`).
    public var leafEvictions = 0
    public init() {}
}

/// Everything a vault holds in memory. Only `Vault` reaches it, through its lock. Each part owns
/// its state and its rules (docs/ARCHITECTURE.md, "Inside the vault"); the extensions of this
/// type are the operations that span parts: contents, write-behind, loads, the commit.
struct VaultState {
    /// The secrets that name and seal the storage's files: the pattern's in format 1; in format 2
    /// the root locator, root key and device names key (`FormatTwoVault`; an upgrade replaces
    /// the pattern's with these at open, `VaultState+Upgrade`; a device joining a vault, with the
    /// vault's, `VaultState+SyncMerge`).
    var secrets: VaultSecrets
    /// What this unlock was given and keeps until it ends: the pattern's secrets and the item
    /// keys' arena (erased at lock), the randomness and clock, whether it may write.
    let session: VaultSession
    var tree: ItemTree
    var chunks: ChunkStore
    var packs: PackStore
    var writer: FileWriter
    var committer: Committer
    var statistics = VaultStatistics()
    /// How many refs a root and an interior page take before the index grows a level (small in
    /// tests, so that a few hundred items make one).
    var indexFanOut = PageTable.FanOut.standard
    /// This open reads index version 3 (`Vault.Options.indexThree`): a sync takes a remote root of
    /// version 3 and writes the local index as version 3 (docs/FORMAT.md §15.1).
    var readsIndexThree = false
    var isLocked = false
    /// What the open found that the user is told (`OpenNotices`).
    var notices = OpenNotices()
    /// Format 2: the vault's identity, or what opened it through a grant (`VaultSharing`).
    var sharing = VaultSharing()
    /// Sync: the bases in flight (`SyncBasePlans`, FORMAT.md §13.11).
    var syncBases = SyncBasePlans()
    /// Sync: files downloaded over names the committed root references (`DownloadStaging`).
    var staging = DownloadStaging()
    /// Sync: other devices' files of groups they released, to remove after the next commit point.
    var releasedElsewhere = Set<UInt64>()
    /// Pages on demand: where leaves not loaded at the open come from; nil when the open read
    /// every leaf (`VaultState+Faulting`).
    var leafSource: IndexLeafSource?
    /// Pages on demand: how many leaves stay loaded between operations (nil: all that were
    /// used), and the clock of their use (`VaultState+Eviction`).
    var leafBudget: Int?
    var leafClock: UInt64 = 0
    /// `statistics.leafLoads` at the last look for leaves to unload.
    var leafLoadsAtEviction = 0

    var storage: any StorageFolder { writer.storage }
    var isNew: Bool { committer.isNew }
    var hasChanges: Bool { tree.hasChanges || committer.hasChanges || chunks.hasChanges }
    /// What the next commit has to do: changes in memory, or storage files written since the
    /// last commit, which it syncs before its root.
    var hasUncommittedChanges: Bool { hasChanges || writer.hasUnsyncedFiles }
    /// Whether a write-behind has not finished: a commit waits for it.
    var writingBehind: Bool { chunks.hasFlights || writer.groupBeingMade || writer.hasAssemblies }

    /// A vault that has never been written: a root folder in memory, nothing on disk. Format 2
    /// unless asked otherwise (tests of format 1).
    init(newVaultIn storage: any StorageFolder, secrets: VaultSecrets, random: any RandomSource, clock: any VaultClock,
         readOnly: Bool, cacheBytes: Int, owner: (uid: UInt32, gid: UInt32), format: StorageFormat = .two) throws {
        session = VaultSession(patternSecrets: secrets, arena: SecretArena(), random: random, clock: clock, readOnly: readOnly)
        let vaultKey = try SecretBytes.random(count: Format.keySize, using: random)
        let covers = Format.coverRange.lowerBound + (try random.uniform(Format.coverRange.count))
        var allocator = FileAllocator(newVaultWithCovers: UInt8(covers))
        var nextItemID = Format.rootItemID + 1
        var identity: X25519.PrivateKey?
        if format == .one {
            self.secrets = secrets
            committer = try Committer(vaultKey: vaultKey, generation: 0)
            writer = FileWriter(storage: storage, secrets: secrets, random: random, allocator: allocator)
        } else {
            let start = try FormatTwoVault.create(patternSecrets: secrets, vaultKey: vaultKey, allocator: &allocator, random: random)
            self.secrets = start.secrets
            committer = try Committer(vaultKey: vaultKey, generation: 0, formatTwo: start.root)
            writer = FileWriter(storage: storage, secrets: start.secrets, random: random, allocator: allocator)
            writer.pendingUnlock = start.unlock
            writer.makesGroupZeroWhole = true
            writer.lendsFreeFiles = true
            identity = start.identity
            nextItemID = UInt64(start.root.itemPrefix) << 32 | nextItemID
        }
        packs = PackStore()
        chunks = ChunkStore(cacheBytes: cacheBytes)
        let now = clock.now()
        // The root folder is written at the first change, not before (R-VLT-2).
        tree = ItemTree(root: ItemRecord(type: .folder, mode: 0o755, uid: owner.uid, gid: owner.gid, atime: now, mtime: now, ctime: now),
                        nextItemID: nextItemID)
        sharing.identity = identity
    }

    /// A vault read from its root and index (`IndexContents` has checked them).
    init(storage: any StorageFolder, secrets: VaultSecrets, patternSecrets: VaultSecrets, random: any RandomSource,
         clock: any VaultClock, readOnly: Bool, cacheBytes: Int, allocator: FileAllocator, nextItemID: UInt64,
         committer: Committer, contents: IndexContents, packs: [UInt64: PackInfo]? = nil, arena: SecretArena) {
        self.secrets = secrets
        session = VaultSession(patternSecrets: patternSecrets, arena: arena, random: random, clock: clock, readOnly: readOnly)
        self.committer = committer
        writer = FileWriter(storage: storage, secrets: secrets, random: random, allocator: allocator)
        writer.lendsFreeFiles = committer.format == .two && committer.upgrade == nil
        self.packs = PackStore(packs: packs ?? contents.packs)
        chunks = ChunkStore(cacheBytes: cacheBytes)
        tree = ItemTree(items: contents.items, children: contents.children, nextItemID: nextItemID)
    }

    /// Erases keys and plaintext (R-MEM-3). The state is unusable afterwards.
    mutating func wipe() {
        chunks.removeAll()
        packs.wipe()
        session.wipe()
        committer.wipe()
        sharing.wipe()
        secrets.wipe()
        tree.removeAll()
        isLocked = true
    }

    func name(_ number: UInt64) throws -> String { try secrets.fileName(number) }

    func checkWritable() throws {
        guard !session.readOnly else { throw VaultError.readOnly }
    }
}
