import Dispatch
import Synchronization
import VaultCrypto
import VaultFormat
import VaultStore

/// A vault opened with a pattern's secrets: the item tree and its contents, committed to the
/// storage with the crash-safe protocol of docs/FORMAT.md §9. Thread-safe: every call takes the
/// vault's lock, so the file system above may call from any thread.
public final class Vault: Sendable {
    public struct Options: Sendable {
        public var readOnly: Bool
        /// Memory for decrypted chunks; dirty ones are written back when it is full.
        public var cacheBytes: Int
        /// Owner of the root folder of a new vault.
        public var owner: (uid: UInt32, gid: UInt32)
        public var writeBehind: WriteBehind
        /// The format of a vault created by this open: format 2; format 1 only for tests that
        /// show what format 1 does (docs/FORMAT.md §13).
        var newVaultFormat = StorageFormat.two
        /// Whether a format-1 vault opened for writing becomes format 2 at its first commit;
        /// off only in tests that show format 1 or play a release without the upgrade.
        var upgradesFormatOne = true
        /// The index's shape (`PageTable.FanOut`); small only in tests of its interior level.
        var indexFanOut = PageTable.FanOut.standard
        /// Index version 3 (docs/FORMAT.md §15): a vault this open creates is written as index 3,
        /// a root of version 3 opens, and §15.1's conversion happens at the first commit that
        /// writes. Off, the open is an earlier release's: a root of version 3 is refused as newer.
        /// Off by default here, for the tests of index 2; `dotsafe` turns it on.
        public var indexThree = false
        /// fsck's open only: an index-3 vault opens although its derived records (§15.3–§15.4)
        /// break §15.6's rules across records, or items nothing reaches are in it; `check()`
        /// reports each and `repair` fixes them. Any other open refuses such a vault, naming
        /// the first broken record ("index 3: …"), or "items not reachable from the root folder".
        public var defersIndexChecks = false
        /// Pages on demand (issue 17, step 6c): an index-3 vault opens reading its root, its
        /// root folder's leaf and the writer's file blocks; each operation loads the leaves of
        /// the items it touches, and whole-vault paths the rest. The cross-record checks of
        /// §15.6 are then fsck's. `dotsafe mount` turns it on with index 3.
        public var loadsOnDemand = false
        /// Held in part: how many index leaves stay loaded between operations once nothing is
        /// left to commit (nil: every leaf used stays). `dotsafe mount --index-cache`.
        public var indexCacheLeaves: Int?
        public init(readOnly: Bool = false, cacheBytes: Int = 256 << 20, owner: (uid: UInt32, gid: UInt32) = (0, 0),
                    writeBehind: WriteBehind = .inline) {
            self.readOnly = readOnly; self.cacheBytes = cacheBytes; self.owner = owner; self.writeBehind = writeBehind
        }
    }

    /// How chunks that a sequential write completes are sealed and stored before the commit:
    /// on the writing thread, or in the background with at most `limit` chunks in flight.
    public enum WriteBehind: Sendable {
        case inline
        case background(limit: Int)
    }

    public typealias ItemType = ItemRecord.ItemType

    /// What `stat` needs of an item.
    public struct Attributes: Equatable, Sendable {
        public var id: UInt64
        public var type: ItemType
        public var mode: UInt32
        public var uid: UInt32
        public var gid: UInt32
        public var rdev: UInt64
        public var size: UInt64
        public var linkCount: Int
        public var atime: Int64
        public var mtime: Int64
        public var ctime: Int64
        /// A file's bytes in chunks that hold data, up to its end (`st_blocks`; holes cost nothing).
        public var allocatedBytes: UInt64
    }

    let state: VaultLock<VaultState>
    let writeBehind: WriteBehindQueue
    let storage: any StorageFolder
    /// Loads ahead not finished yet, counted under the vault's lock as they are made: `lock` and
    /// `discard` wait for them.
    let loadsInFlight = DispatchGroup()

    init(_ state: consuming VaultState, storage: any StorageFolder, writeBehind: WriteBehind) {
        self.state = VaultLock(state)
        self.storage = storage
        self.writeBehind = WriteBehindQueue(writeBehind)
    }

    /// Opens the vault these secrets find, or a new empty one; throws `damagedIndex` when
    /// something is at its index name that does not open (never an empty vault then).
    public static func open(storage: any StorageFolder, secrets: VaultSecrets, options: Options = Options(),
                            random: any RandomSource = SystemRandom(), clock: any VaultClock = SystemClock()) throws -> Vault {
        do {
            var state = try VaultState.open(storage: storage, secrets: secrets, random: random, clock: clock,
                                            options: .init(readOnly: options.readOnly, cacheBytes: options.cacheBytes, owner: options.owner,
                                                           newVaultFormat: options.newVaultFormat,
                                                           upgradesFormatOne: options.upgradesFormatOne, indexThree: options.indexThree,
                                                           defersIndexChecks: options.defersIndexChecks,
                                                           loadsOnDemand: options.loadsOnDemand))
            state.indexFanOut = options.indexFanOut
            if state.loadsOnDemand { state.leafBudget = options.indexCacheLeaves }
            state.readsIndexThree = options.indexThree
            // The state's storage: a read-only open may read staged downloads where they lie.
            let reading = state.storage
            return Vault(state, storage: reading, writeBehind: options.writeBehind)
        } catch {
            throw VaultError.wrap(error)
        }
    }

    /// True until the first commit: nothing of this vault is on disk.
    public var isNew: Bool { state.withLock { $0.isNew } }
    public var generation: UInt64 { state.withLock { $0.committer.generation } }
    /// 1 or 2: the format the vault's storage is written in (docs/FORMAT.md §13). A format-1
    /// vault opened for writing stays 1 until its first commit upgrades it (§13.9).
    public var formatVersion: Int { state.withLock { $0.committer.storedFormat == .one ? 1 : 2 } }
    /// Whether the vault's root locator RL is still the pattern's locator LOC and device 0's
    /// names key NKd still the pattern's NK (docs/FORMAT.md §13.9): true for a format-1 vault
    /// and for one upgraded from format 1 until a pattern change moves them; false for a vault
    /// created as format 2.
    public var namesArePatternDerived: (rootLocator: Bool, namesKey: Bool) { state.withLock { $0.namesArePatternDerived } }
    /// Format 2: why a root the vault committed is not in its slots (missing, damaged, older),
    /// naming the generation opened; nil when the slots are as commits and crashes leave them.
    public var rollbackWarning: String? { state.withLock { $0.notices.rollbackWarning } }
    /// The name of the vault's file `number` in its storage (tests and tools that look at files);
    /// format 2's unlock record has the name the pattern gives it.
    public func storageName(ofFile number: UInt64) throws -> String {
        try state.withLock { state in
            try state.specialFileNames[number] ?? state.name(number)
        }
    }
    public var statistics: VaultStatistics { state.withLock { $0.statistics } }
    public var hasUncommittedChanges: Bool { state.withLock { $0.hasUncommittedChanges } }
    /// `hasUncommittedChanges` if the vault's lock is free now, else nil: a commit may hold it
    /// for seconds (a sync's merge), and `dotsafe status` answers meanwhile.
    public var hasUncommittedChangesIfFree: Bool? { state.withLockIfAvailable { $0.hasUncommittedChanges } }
    public var isReadOnly: Bool { state.withLock { $0.session.readOnly } }
    /// Whether the item keys sit in locked memory (false when RLIMIT_MEMLOCK ran out).
    public var keysAreLocked: Bool { state.withLock { $0.session.arena.isLocked && $0.committer.vaultKey.isLocked } }
    /// The chunk cache's limit and how much of it can be locked in RAM: less than the limit when
    /// RLIMIT_MEMLOCK does not allow all of it (`mount` says so; the rest may be swapped out).
    public var cacheLocking: (lockable: Int, limit: Int) {
        state.withLock { ($0.chunks.cache.lockableBytes, $0.chunks.cache.limit) }
    }
    /// Gives back what the vault keeps ready for the next blocks: the memory of the chunk
    /// cache (the plaintext pool's free frames) and the storage's unnamed files opened ahead. For
    /// a daemon that has gone quiet. Returns the bytes of memory given back.
    @discardableResult
    public func releaseSpareMemory() -> Int {
        storage.releaseSpareFiles()
        return state.withLock { $0.chunks.cache.pool.releaseFreeFrames() }
    }
    public static let rootID = Format.rootItemID
    /// The format's sizes and limits, for the layers above (which do not import VaultFormat).
    public typealias Limits = Format
    /// Items the vault holds, the root and items unlinked but still held included (statfs).
    public var itemCount: Int { state.withLock { $0.tree.items.count } }

    // MARK: Items

    public func attributes(_ id: UInt64) throws -> Attributes {
        try lockedEvicting { state in
            try state.fault(id)
            return try state.attributes(id)
        }
    }

    public func lookup(_ parent: UInt64, _ name: [UInt8]) throws -> UInt64 {
        try lockedEvicting { try $0.lookup(parent, name) }
    }

    /// A folder's entries, sorted by name so that listings are stable.
    public func contents(ofFolder id: UInt64) throws -> [(name: [UInt8], id: UInt64)] {
        try lockedEvicting { state in
            try state.fault(id)
            return try state.tree.folder(id).map { (name: $0.key, id: $0.value) }.sorted { $0.name.lexicographicallyPrecedes($1.name) }
        }
    }

    public func symlinkTarget(_ id: UInt64) throws -> [UInt8] {
        try locked { state in
            try state.fault(id)
            let item = try state.item(id)
            guard item.record.type == .symlink else { throw VaultError.wrongType }
            return item.record.target
        }
    }

    @discardableResult
    public func create(_ type: ItemType, in parent: UInt64, named name: [UInt8], mode: UInt32, uid: UInt32 = 0, gid: UInt32 = 0,
                       rdev: UInt64 = 0, target: [UInt8] = []) throws -> UInt64 {
        try locked { try $0.create(type, in: parent, named: name, mode: mode, uid: uid, gid: gid, rdev: rdev, target: target) }
    }

    public func link(_ id: UInt64, into parent: UInt64, named name: [UInt8]) throws {
        try locked { try $0.link(id, into: parent, named: name) }
    }

    /// unlink(2) (`folder: false`) or rmdir(2) (`folder: true`).
    public func remove(_ name: [UInt8], from parent: UInt64, folder: Bool = false) throws {
        try locked { try $0.unlink(parent, name, folder: folder) }
    }

    public func rename(_ name: [UInt8], in parent: UInt64, to newName: [UInt8], in newParent: UInt64, replace: Bool = true) throws {
        try locked { try $0.rename(parent, name, to: newParent, newName, replace: replace) }
    }

    public func setAttributes(_ id: UInt64, mode: UInt32? = nil, uid: UInt32? = nil, gid: UInt32? = nil,
                              atime: Int64? = nil, mtime: Int64? = nil) throws {
        try locked { try $0.setAttributes(id, mode: mode, uid: uid, gid: gid, atime: atime, mtime: mtime) }
    }

    /// What a change of owner takes from the item (`PrivilegeDrop`).
    public func dropPrivileges(_ id: UInt64, _ drop: PrivilegeDrop) throws {
        try locked { state in
            try state.checkWritable()
            try state.fault(id)
            state.tree.dropPrivileges(id, drop, now: state.session.clock.now())
        }
    }

    public func extendedAttribute(_ id: UInt64, _ name: [UInt8]) throws -> [UInt8] {
        try locked { state in
            try state.fault(id)
            guard let value = try state.item(id).record.xattrs.first(where: { $0.name == name })?.value else { throw VaultError.notFound }
            return value
        }
    }

    public func extendedAttributeNames(_ id: UInt64) throws -> [[UInt8]] {
        try locked { state in
            try state.fault(id)
            return try state.item(id).record.xattrs.map(\.name)
        }
    }

    /// Sets (or with nil removes) an extended attribute; `create`/`replace` as XATTR_CREATE/REPLACE.
    public func setExtendedAttribute(_ id: UInt64, _ name: [UInt8], _ value: [UInt8]?, create: Bool = false, replace: Bool = false) throws {
        try locked { try $0.setExtendedAttribute(id, name, value, create: create, replace: replace) }
    }

    public func hold(_ id: UInt64) { state.withLock { state in if (try? state.fault(id)) != nil { state.hold(id) } } }
    public func release(_ id: UInt64) {
        state.withLock { state in
            // An item evicted while held comes back to be released (its holds came with it).
            guard (try? state.fault(id)) != nil else { return }
            state.release(id)
            state.evictLeavesOverBudget()
        }
    }

    // MARK: Contents

    public func read(_ id: UInt64, offset: UInt64, count: Int) throws -> [UInt8] {
        try readPieces(id, offset: offset, count: count).joined
    }

    /// The bytes of a read as slices of decrypted chunks lent from the cache, not copied: what a
    /// FUSE reply sends. Chunks are decrypted outside the lock, and those after a sequential read
    /// ahead of it.
    public func readPieces(_ id: UInt64, offset: UInt64, count: Int) throws -> [PlaintextSlice] {
        var chunks: [Int] = []
        return try readPieces(id, offset: offset, count: count, chunksReadAtRandom: &chunks)
    }

    /// The same, adding to `chunksReadAtRandom` the chunks it read if it landed away from the
    /// file's previous read (`ChunkStore.noteRead`): chunks whose other pages the kernel is
    /// likely to ask for next, one round trip each, while the vault holds them whole
    /// (`chunkForKernelCache`).
    public func readPieces(_ id: UInt64, offset: UInt64, count: Int, chunksReadAtRandom: inout [Int]) throws -> [PlaintextSlice] {
        let (end, sequential, atRandom) = try locked { try $0.startRead(id, offset: offset, count: count) }
        var pieces: [PlaintextSlice] = []
        for piece in ChunkOffsets.pieces(from: offset, to: end) {
            let n = piece.range.count
            let stored = try chunkBytes(id, piece.index, piece.range, sequential: sequential)
            if atRandom { chunksReadAtRandom.append(piece.index) }
            if stored.count > 0 { pieces.append(stored) }
            if stored.count < n { pieces.append(.zeros(n - stored.count)) }
        }
        return pieces
    }

    /// Loads ahead of a sequential reader: a reader that reaches one waits for it (`.wait`), and
    /// one that fails is dropped (the reader's own load reports the error). A job holds the vault
    /// only while it runs, so that once `lock` has waited for them none keeps it, and its
    /// storage folder's descriptor, alive.
    private func loadInBackground(_ loads: [ChunkLoad]) {
        for load in loads {
            LoadQueues.shared.submit { [weak self, loadsInFlight] in
                self?.finishInBackground(load)
                loadsInFlight.leave()
            }
        }
    }

    private func finishInBackground(_ load: ChunkLoad) {
        let result = Result { try load.run(storage) }
        let waits = state.withLock { state in
            state.onDataPath { state in
                _ = try? state.finishLoad(load, result)
                return state.evictionWaitsForGroup
            }
        }
        if waits { try? settleData() }
    }

    /// The stored bytes of `range` of a chunk (shorter past its end), lent. A load decrypts into
    /// the cache's memory; a buffer the cache does not keep is zeroed when its last slice goes.
    private func chunkBytes(_ id: UInt64, _ index: Int, _ range: Range<Int>, sequential: Bool) throws -> PlaintextSlice {
        while true {
            let step = try locked { state in
                let step = try state.chunkStep(id, index, range, sequential: sequential)
                // Counted under the lock, so that a lock after this one waits for them.
                for _ in step.ahead { loadsInFlight.enter() }
                return step
            }
            switch step {
            case .ready(let bytes, let ahead):
                loadInBackground(ahead)
                return bytes
            case .load(let load, let ahead):
                loadInBackground(ahead)
                let result = Result { try load.run(storage) }
                let bytes: PlaintextSlice?, waits: Bool
                do {
                    (bytes, waits) = try state.withLock { state in
                        try state.onDataPath { state in (try state.finishLoad(load, result, range: range), state.evictionWaitsForGroup) }
                    }
                } catch {
                    throw VaultError.wrap(error)
                }
                // The cached load evicted, and a dirty chunk waits for free files.
                if waits { try settleData() }
                if let bytes { return bytes }
            case .wait(let loading):
                loading.wait()
            }
        }
    }

    public func write(_ id: UInt64, offset: UInt64, bytes: [UInt8]) throws {
        try write(id, at: offset, bytes: bytes.span.bytes)
    }

    /// A write from memory the caller owns (a FUSE request's buffer): its bytes are copied
    /// once, into the chunks they change. `drop`: what the write takes from the file; true if
    /// it took something.
    @discardableResult
    public func write(_ id: UInt64, offset: UInt64, bytes: RawSpan, dropping drop: PrivilegeDrop? = nil) throws -> Bool {
        try write(id, at: offset, bytes: bytes, dropping: drop)
    }

    /// Writes at the end of the file as it is under the lock (O_APPEND): two appends never
    /// land at the same offset, and the caller needs no lock of its own around size and write.
    public func append(_ id: UInt64, bytes: [UInt8]) throws {
        try write(id, at: nil, bytes: bytes.span.bytes)
    }

    @discardableResult
    public func append(_ id: UInt64, bytes: RawSpan, dropping drop: PrivilegeDrop? = nil) throws -> Bool {
        try write(id, at: nil, bytes: bytes, dropping: drop)
    }

    /// A write at `offset`, or at the end for nil. A writer that finds no room for its
    /// write-behinds waits here, outside the vault's lock and any lock of the caller's.
    @discardableResult
    private func write(_ id: UInt64, at offset: UInt64?, bytes: RawSpan, dropping drop: PrivilegeDrop? = nil) throws -> Bool {
        let (jobs, waiting, evictionWaits, dropped) = try locked { state in
            try state.onDataPath { state in
                try state.fault(id)
                if !bytes.isEmpty { try state.writer.checkRoomForData() }
                let position = try offset ?? state.file(id).record.size
                let completed = try state.write(id, offset: position, bytes: bytes)
                state.tree.touchContent(id, now: state.session.clock.now())
                let dropped = drop.map { state.tree.dropPrivileges(id, $0, now: state.session.clock.now()) } ?? false
                let (jobs, waiting) = state.startWritesBehind(id, completed)
                return (jobs, waiting, state.evictionWaitsForGroup, dropped)
            }
        }
        submit(jobs)
        if !waiting.isEmpty || evictionWaits { try settleData(writesOf: id, waiting: waiting) }
        return dropped
    }

    /// Runs write-behinds outside the lock (queued: a writer that finds no room waits here).
    func submit(_ jobs: [WriteBehindJob]) {
        for job in jobs {
            writeBehind.submit { [self] in
                switch job {
                case .chunk(let write) where write.target == .group:
                    let sealed = Result { try GroupFile.store(try write.seal(), in: storage) }
                    if let group = state.withLock({ $0.depositChunkWrite(write, sealed) }) { makeAssembledGroup(group) }
                case .chunk(let write):
                    var failure: (any Error)?
                    do { try write.run(storage) } catch { failure = error }
                    state.withLock { $0.finishChunkWrite(write, error: failure) }
                case .group(let write):
                    let outcome = write.run(storage)
                    state.withLock { $0.finishGroupWrite(write, outcome) }
                }
            }
        }
    }

    /// Makes a group assembled from chunks written behind, outside the lock (FORMAT.md §3.3).
    private func makeAssembledGroup(_ group: GroupCreation) {
        var failure: (any Error)?
        do { try group.run(storage) } catch { failure = error }
        state.withLock { $0.finishAssembly(group, failure: failure) }
    }

    /// A number that moves on whenever the item's content changes (0: not in this session):
    /// what the kernel cached of a file is current while it has not moved (`FileSystem.open`).
    public func contentVersion(_ id: UInt64) -> UInt64 { state.withLock { $0.chunks.contentVersion(id) } }

    /// A copy of chunk `index` of file `id` as the vault holds it now, and the file's size,
    /// if its newest bytes are in memory (nothing is loaded for this): what the file system
    /// may push into the kernel's page cache after a read at random loaded it.
    public func chunkForKernelCache(_ id: UInt64, _ index: Int) -> (bytes: [UInt8], fileSize: UInt64)? {
        state.withLock { state in
            guard !state.isLocked, let item = try? state.file(id), case .chunked = item.record.layout else { return nil }
            let key = ChunkCache.Key(item: id, index: index)
            guard state.chunks.isInMemory(key), let bytes = state.chunks.cached(key) else { return nil }
            return (bytes, item.record.size)
        }
    }

    /// The whole content of file `id` as the vault holds it now, loaded if need be, if the file
    /// is not empty and at most `limit` bytes long: what the file system pushes into the
    /// kernel's page cache at an open for reading, so that the read after it costs no request.
    /// The kernel holds it then: the vault's cache keeps none of it (`ChunkStore.dropPushed`).
    public func contentForKernelCache(_ id: UInt64, upTo limit: Int) -> [UInt8]? {
        guard let size = try? locked({ state in
            try state.fault(id)
            return try state.file(id).record.size
        }), size > 0, size <= UInt64(limit) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(size))
        for piece in ChunkOffsets.pieces(from: 0, to: size) {
            guard let stored = try? chunkBytes(id, piece.index, piece.range, sequential: false) else {
                bytes.wipe()
                return nil
            }
            stored.withUnsafeBytes { bytes.append(contentsOf: $0) }
            // A hole, or a truncate meanwhile: zeros, as a read gives.
            bytes.append(contentsOf: repeatElement(0, count: piece.range.count - min(piece.range.count, stored.count)))
        }
        _ = try? locked { state in
            for piece in ChunkOffsets.pieces(from: 0, to: size) { state.chunks.dropPushed(ChunkCache.Key(item: id, index: piece.index)) }
        }
        return bytes
    }

    /// Erases a copy of plaintext (`chunkForKernelCache`'s) before it is freed.
    public static func wipe(_ bytes: inout [UInt8]) { bytes.wipe() }

    /// Cuts or extends file `id` to `size` (zeros). `drop`: what the truncate takes from the
    /// file; true if it took something.
    @discardableResult
    public func truncate(_ id: UInt64, size: UInt64, dropping drop: PrivilegeDrop? = nil) throws -> Bool {
        let (evictionWaits, dropped) = try locked { state in
            try state.onDataPath { state in
                try state.fault(id)
                try state.truncate(id, size: size)
                state.tree.touchContent(id, now: state.session.clock.now())
                let dropped = drop.map { state.tree.dropPrivileges(id, $0, now: state.session.clock.now()) } ?? false
                return (state.evictionWaitsForGroup, dropped)
            }
        }
        if evictionWaits { try settleData() }
        return dropped
    }

    // MARK: Durability

    /// Makes every change durable (fsync, the group-commit timer).
    public func commit() throws {
        try afterWritesBehind { state in
            guard !state.isLocked else { throw VaultError.locked }
            do { try state.commit() } catch {
                state.writer.noteWriteFailure(error)
                throw error
            }
            state.evictLeavesOverBudget(always: true)
        }
    }

    /// Writes everything, refreshes covers, re-creates files (docs/FORMAT.md §11.3: the storage
    /// decides which), then erases keys and plaintext. The vault is unusable afterwards. Keys are
    /// erased even when the last commit fails.
    public func lock() throws {
        // Once locked no load starts; those begun end before the lock does, so that no copy of
        // a chunk key and no read of the storage outlive it.
        defer { loadsInFlight.wait() }
        try afterWritesBehind { state in
            guard !state.isLocked else { return }
            defer { state.wipe() }
            try state.commit(final: true)
            // Best effort: the changes are committed by now, and a re-creation that fails (a full
            // disk) leaves every file as it was, its copies removed here or at the next open.
            if !state.session.readOnly { try? storage.recreateAtLock(random: state.session.random) }
        }
    }

    /// Runs `body` under the lock once no chunk is being written behind: a commit includes them.
    /// Groups still being assembled are made first, with what they have.
    func afterWritesBehind(_ body: (inout VaultState) throws -> Void) throws {
        while true {
            writeBehind.waitUntilIdle()
            let groups = try state.withLock { state -> [GroupCreation]? in
                let groups = state.writer.closeAssemblies()
                guard groups.isEmpty, !state.writingBehind else { return groups }
                do { try body(&state) } catch { throw VaultError.wrap(error) }
                return nil
            }
            guard let groups else { return }
            groups.forEach(makeAssembledGroup)
        }
    }

    /// `locked`, then index leaves over the budget go, but for those this call used (pages on
    /// demand): the calls that walk names evict.
    func lockedEvicting<R>(_ body: (inout VaultState) throws -> R) throws -> R {
        try locked { state in
            let start = state.leafClock
            defer { state.evictLeavesOverBudget(keepingUsedAfter: start) }
            return try body(&state)
        }
    }

    func locked<R>(_ body: (inout VaultState) throws -> R) throws -> R {
        try state.withLock { state in
            guard !state.isLocked else { throw VaultError.locked }
            do { return try body(&state) } catch { throw VaultError.wrap(error) }
        }
    }
}

extension VaultState {
    func attributes(_ id: UInt64) throws -> Vault.Attributes {
        let item = try tree.item(id)
        let record = item.record
        return Vault.Attributes(id: id, type: record.type, mode: record.mode, uid: record.uid, gid: record.gid, rdev: record.rdev,
                                size: record.size, linkCount: tree.linkCount(id, item), atime: record.atime, mtime: record.mtime,
                                ctime: record.ctime, allocatedBytes: allocatedBytes(id, item))
    }
}
