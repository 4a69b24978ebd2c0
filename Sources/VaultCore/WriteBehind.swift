import VaultCrypto
import VaultFormat
import VaultStore

/// Write-behind: a chunk that a sequential write has filled is sealed and stored without
/// waiting for the commit, and without the vault's lock; so are the files of the next group
/// the chunks will go to. Each is prepared under the lock (numbers, one-time key, padding:
/// everything that touches the state or the arena), run outside it, finished under it.
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
    /// The number's file does not exist yet (a new group's): it is created whole.
    let create: Bool
    let body: [UInt8]
    let padding: [UInt8]
    let oneTime: Sealer.OneTimeKey

    /// The AES and storage work: no state, no lock.
    func run(_ storage: any StorageFolder) throws {
        defer { oneTime.subkey.wipe() }
        let file = try Sealer.sealEnvelope(kind: .chunk, body: body[...], padding: padding, with: oneTime, label: Label.sealChunk,
                                           context: VaultState.le(key.item) + VaultState.le(UInt64(key.index)))
        if create {
            try storage.create(name, contents: file, durable: false)
        } else {
            try storage.write(name, offset: 0, bytes: file)
        }
    }
}

/// The random files of a new group, made whole before any data goes in (as `createGroupFiles`
/// does under the lock). Its numbers are handed out only once it has finished.
struct GroupWrite: Sendable {
    let numbers: Range<UInt64>
    let names: [String]
    let random: any RandomSource

    /// Makes each file that is not there; stops at the first failure (a full disk). Something
    /// already at a name is not ours and is left alone (R-SEC-4).
    func run(_ storage: any StorageFolder) -> (created: [UInt64], present: [UInt64]) {
        var created: [UInt64] = [], present: [UInt64] = []
        for (number, name) in zip(numbers, names) {
            do {
                if try storage.entryExists(name) {
                    present.append(number)
                } else {
                    try storage.create(name, contents: try random.bytes(Format.fileSize), durable: false)
                    created.append(number)
                }
            } catch {
                break
            }
        }
        return (created, present)
    }
}

/// A chunk being written behind: its bytes (newer than what its stored reference holds) and the
/// token that says which write of it is the latest.
struct Flight {
    var token: UInt64
    var bytes: [UInt8]
}

/// Where a file is being written sequentially: the run of bytes written back to back.
struct SequentialRun {
    var start: UInt64
    var end: UInt64
}

extension VaultState {
    /// Whether a write-behind has not finished: a commit waits for it.
    var writingBehind: Bool { !flights.isEmpty || groupBeingMade }

    /// Notes a write of `start..<end` and returns the chunks it completed within one
    /// sequential run: those are not written again soon, so they can go to storage now. A
    /// database rewriting pages never completes a chunk this way and keeps its chunks in memory.
    mutating func chunksCompletedSequentially(_ id: UInt64, _ start: UInt64, _ end: UInt64) -> Range<Int> {
        let payload = UInt64(Self.payload)
        var run = runs[id] ?? SequentialRun(start: start, end: start)
        if run.end != start { run = SequentialRun(start: start, end: start) }
        run.end = end
        runs[id] = run
        let first = (run.start + payload - 1) / payload  // the first chunk the run began at or before
        let firstEnding = start / payload                // the first chunk whose end this write reaches
        let last = end / payload                         // chunks before this one end at or before `end`
        let lower = max(first, firstEnding)
        return lower < last ? Int(lower)..<Int(last) : 0..<0
    }

    /// Prepares write-behind of these dirty chunks of a chunked file, and of the next group
    /// when free files run short; anything that stops a chunk (a full disk while making a group
    /// here) leaves it dirty for the commit to write and report.
    mutating func startWritesBehind(_ id: UInt64, _ indexes: Range<Int>) -> [WriteBehindJob] {
        guard !indexes.isEmpty else { return [] }
        var jobs = startChunkWrites(id, indexes).map(WriteBehindJob.chunk)
        if !groupBeingMade && allocator.freeCount < Self.reservedFiles + Format.groupSize, let names = try? allocator.startGroupNames(name) {
            groupBeingMade = true
            jobs.append(.group(GroupWrite(numbers: names.numbers, names: names.names, random: random)))
        }
        return jobs
    }

    private mutating func startChunkWrites(_ id: UInt64, _ indexes: Range<Int>) -> [ChunkWrite] {
        guard let item = items[id], item.isFile, item.record.size >= UInt64(Self.payload), let slot = item.key else { return [] }
        // A file leaving its pack does so at the commit (storeChunk), not here.
        if case .packed = item.record.layout { return [] }
        var writes: [ChunkWrite] = []
        for index in indexes {
            let key = ChunkCache.Key(item: id, index: index)
            guard cache.isDirty(key), let body = cache.get(key) else { continue }
            do {
                let number = try allocateUsable(data: true)
                // Everything that can fail comes before the flight is registered: a commit waits
                // for every registered flight.
                let fileName: String, padding: [UInt8], oneTime: Sealer.OneTimeKey
                do {
                    fileName = try name(number)
                    padding = try random.bytes(Self.payload - body.count)
                    oneTime = try Sealer.OneTimeKey(.arena(slot, arena), random: random)
                } catch {
                    allocator.release(number)
                    throw error
                }
                nextFlightToken += 1
                flights[key] = Flight(token: nextFlightToken, bytes: body)
                cache.markClean(key)
                items[id]!.record.layout = .chunked
                statistics.chunkEncrypts += 1
                writes.append(ChunkWrite(key: key, token: nextFlightToken, number: number, name: fileName,
                                         create: allocator.needsCreate(number), body: body, padding: padding, oneTime: oneTime))
            } catch {
                break
            }
        }
        return writes
    }

    /// Publishes a finished write-behind, unless a later write of the chunk, a truncate or a
    /// delete made it stale: then its file is free again. A failed one leaves the chunk dirty.
    mutating func finishChunkWrite(_ write: ChunkWrite, error: (any Error)?) {
        let stored = error == nil
        if stored {
            if write.create {
                allocator.markCreated(write.number)
                createdSinceCommit = true
            }
            unsynced.insert(write.number)
        }
        guard let flight = flights[write.key], flight.token == write.token else {
            allocator.release(write.number)
            return
        }
        flights[write.key] = nil
        guard stored, items[write.key.item] != nil else {
            allocator.release(write.number)
            if items[write.key.item] != nil { cache.put(write.key, bytes: flight.bytes, dirty: true) }
            return
        }
        let (id, index) = (write.key.item, write.key.index)
        if let old = items[id]!.chunks[index] { allocator.release(old.fileNumber) }
        items[id]!.chunks[index] = SealedRef(fileNumber: write.number, nonce: write.oneTime.nonce)
        dirtySegments[id, default: []].insert(index / Format.chunksPerSegment)
        dirtyItems.insert(id)
    }

    mutating func finishGroupWrite(_ write: GroupWrite, created: [UInt64], present: [UInt64]) {
        for number in created + present { allocator.markCreated(number) }
        unsynced.formUnion(created)
        if !created.isEmpty { createdSinceCommit = true }
        // Numbers whose files could not be made stay unwritten: made when data goes in, or at the
        // commit, or dropped with the group if nothing does.
        allocator.groupIsMade(write.numbers)
        groupBeingMade = false
    }

    /// Forgets write-behinds of these chunks: what they stored is no longer wanted.
    mutating func dropFlights(_ id: UInt64, fromIndex first: Int = 0) {
        for key in flights.keys where key.item == id && key.index >= first { flights[key] = nil }
    }
}
