import VaultCrypto
import VaultFormat
import VaultStore

/// Write-behind: a chunk that a sequential write has filled is sealed and stored without
/// waiting for the commit, and without the vault's lock: into a free file, or, when the free
/// files are down to the reserve, into its file of a new group being assembled (`GroupAssembly`),
/// made whole once its files are sealed. Each is prepared under the lock (numbers, one-time
/// key, padding: everything that touches the state or the arena), run outside it, finished
/// under it.
enum WriteBehindJob: Sendable {
    case chunk(ChunkWrite)
    case group(GroupWrite)
}

/// One chunk. Until it finishes, the chunk's bytes stay readable through `flights`.
struct ChunkWrite: Sendable {
    let key: ChunkCache.Key
    let token: UInt64
    let number: UInt64
    let name: String
    let target: Target
    enum Target: Sendable {
        /// A free file, written over.
        case overwrite
        /// The number's file does not exist (removed behind the vault's back): made again.
        case create
        /// A file of a group being assembled: sealed into memory, made with its group.
        case group
    }
    /// The chunk's buffer, shared with the cache: nothing changes it while this runs.
    let body: PlaintextBuffer
    let padding: [UInt8]
    let oneTime: Sealer.OneTimeKey
    let format: StorageFormat
    /// Format 2: the chunk's own key, recorded in its segment once the write is published.
    let sealKey: SecretArena.Slot?

    /// The AES and storage work: no state, no lock.
    func run(_ storage: any StorageFolder) throws {
        let file = try seal()
        if case .create = target {
            try storage.create(name, contents: file, durable: false)
        } else {
            try storage.write(name, offset: 0, bytes: file)
        }
    }

    /// The chunk's file: its envelope, padded.
    func seal() throws -> [UInt8] {
        defer { oneTime.subkey.wipe() }
        let seal: SealContext = format == .one ? .chunk(item: key.item, index: key.index) : .chunkV2(index: key.index)
        return try Sealer.sealEnvelope(kind: .chunk, version: format.envelopeVersion, body: body, padding: padding,
                                       with: oneTime, seal: seal)
    }
}

/// The random files of a new group, made whole before any data goes in, outside the vault's
/// lock, by a request whose eviction needs free files (`Vault+DataRoom`).
/// Its numbers are handed out only once it has finished.
struct GroupWrite: Sendable {
    let numbers: Range<UInt64>
    let names: [String]
    let random: any RandomSource

    struct Outcome: Sendable {
        /// Files made (when not complete: the ones that could not be removed again).
        var created: [UInt64] = []
        /// Numbers where something not ours is (R-SEC-4): left alone, never written.
        var present: [UInt64] = []
        /// Every number has its file (or something not ours).
        var complete: Bool { failure == nil }
        /// Why a file could not be made (a full disk).
        var failure: (any Error)?
    }

    /// Makes each file that is not there, together (§3.3), as a group made under the lock is.
    /// A failure (a full disk) leaves none of them: a group is whole or not there.
    func run(_ storage: any StorageFolder) -> Outcome {
        var outcome = Outcome()
        for (number, name) in zip(numbers, names) {
            do {
                if try storage.entryExists(name) {
                    outcome.present.append(number)
                } else {
                    outcome.created.append(number)
                }
            } catch {
                outcome.failure = error
                return outcome
            }
        }
        do {
            try storage.createGroup(try outcome.created.map { (names[Int($0 - numbers.lowerBound)], try random.bytes(Format.fileSize)) })
        } catch {
            outcome.failure = error
            outcome.created = []
        }
        return outcome
    }
}

extension VaultState {
    /// Prepares write-behind of these dirty chunks of a chunked file, and of the next group
    /// when free files run short. Returns the chunks that wait for a new group (the free files
    /// are down to the reserve, and no group is made under the lock): `Vault` makes it and
    /// starts them. Anything else that stops a chunk leaves it dirty for the commit to write
    /// and report.
    mutating func startWritesBehind(_ id: UInt64, _ indexes: Range<Int>) -> (jobs: [WriteBehindJob], waiting: Range<Int>) {
        guard !indexes.isEmpty else { return ([], 0..<0) }
        let (writes, waiting) = startChunkWrites(id, indexes)
        return (writes.map(WriteBehindJob.chunk), waiting)
    }

    private mutating func startChunkWrites(_ id: UInt64, _ indexes: Range<Int>) -> ([ChunkWrite], waiting: Range<Int>) {
        guard let item = tree.items[id], item.isFile, item.record.size >= UInt64(Self.payload) else { return ([], 0..<0) }
        let format = self.format
        guard format == .two || item.key != nil else { return ([], 0..<0) }
        // A file leaving its pack does so at the commit (storeChunk), not here.
        if case .packed = item.record.layout { return ([], 0..<0) }
        var writes: [ChunkWrite] = []
        for index in indexes {
            let key = ChunkCache.Key(item: id, index: index)
            guard chunks.isDirty(key), let count = chunks.storedCount(key) else { continue }
            do {
                let number = try writer.mayTakeData ? writer.allocateUsable(data: true) : writer.takeAssembledNumber()
                // Everything that can fail comes before the flight is registered: a commit waits
                // for every registered flight.
                let fileName: String, padding: [UInt8], oneTime: Sealer.OneTimeKey
                var sealKey: SecretArena.Slot?
                do {
                    fileName = try name(number)
                    padding = try session.random.bytes(Self.payload - count)
                    if format == .two { sealKey = try session.arena.allocateRandom(using: session.random) }
                    oneTime = try Sealer.OneTimeKey(.arena(sealKey ?? item.key!, session.arena), random: session.random)
                } catch {
                    if writer.isAssembled(number) { writer.giveBackAssembled(number) } else { writer.release(number) }
                    if let sealKey { session.arena.free(sealKey) }
                    throw error
                }
                let (token, body) = chunks.startFlight(key)!
                tree.update(id) { $0.layout = .chunked }
                statistics.chunkEncrypts += 1
                let target: ChunkWrite.Target = writer.isAssembled(number) ? .group : writer.allocator.needsCreate(number) ? .create : .overwrite
                writes.append(ChunkWrite(key: key, token: token, number: number, name: fileName, target: target, body: body,
                                         padding: padding, oneTime: oneTime, format: format, sealKey: sealKey))
            } catch is FileWriter.GroupNeeded {
                return (writes, index..<indexes.upperBound)
            } catch {
                break
            }
        }
        return (writes, 0..<0)
    }

    /// Publishes a finished write-behind, unless a later write of the chunk, a truncate or a
    /// delete made it stale: then its file is free again. A failed one leaves the chunk dirty.
    mutating func finishChunkWrite(_ write: ChunkWrite, error: (any Error)?) {
        let stored = error == nil
        writer.noteWriteFailure(error)
        switch write.target {
        case .overwrite where stored: writer.didStoreBehind(write.number, created: false)
        case .create where stored: writer.didStoreBehind(write.number, created: true)
        default: break
        }
        let ref = write.sealKey.map { StoredRef(fileNumber: write.number, key: $0) }
            ?? StoredRef(fileNumber: write.number, nonce: write.oneTime.nonce)
        guard let body = chunks.finishFlight(write.key, token: write.token) else {
            release(ref)
            return
        }
        let (id, index) = (write.key.item, write.key.index)
        guard stored, tree.items[id] != nil else {
            release(ref)
            if tree.items[id] != nil { chunks.failedFlight(write.key, body) }
            return
        }
        if let old = tree.setChunk(id, index, ref) { release(old) }
        chunks.dropStored(write.key, body)
    }

    mutating func finishGroupWrite(_ write: GroupWrite, _ outcome: GroupWrite.Outcome) {
        writer.finishGroupWrite(write, outcome)
    }

    /// A write-behind into an assembled group sealed its chunk (`sealed`); returns the group to
    /// make when it was the last.
    mutating func depositChunkWrite(_ write: ChunkWrite, _ sealed: Result<GroupFile, any Error>) -> GroupCreation? {
        writer.deposit(write, sealed)
    }

    /// An assembled group was made, or not (`failure`): its write-behinds are published, or
    /// their chunks are dirty again. The group's files first, so that a stale chunk's number is
    /// freed into a file that exists.
    mutating func finishAssembly(_ creation: GroupCreation, failure: (any Error)?) {
        writer.finishAssembly(creation, failure: failure)
        for (write, sealingFailure) in creation.writes { finishChunkWrite(write, error: failure ?? sealingFailure) }
    }
}
