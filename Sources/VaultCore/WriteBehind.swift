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
    /// The chunk's buffer, shared with the cache: nothing changes it while this runs.
    let body: PlaintextBuffer
    let padding: [UInt8]
    let oneTime: Sealer.OneTimeKey

    /// The AES and storage work: no state, no lock.
    func run(_ storage: any StorageFolder) throws {
        defer { oneTime.subkey.wipe() }
        let file = try Sealer.sealEnvelope(kind: .chunk, body: body, padding: padding, with: oneTime,
                                           seal: .chunk(item: key.item, index: key.index))
        if create {
            try storage.create(name, contents: file, durable: false)
        } else {
            try storage.write(name, offset: 0, bytes: file)
        }
    }
}

/// The random files of a new group, made whole before any data goes in (as
/// `FileWriter.allocateUsable` does under the lock). Its numbers are handed out only once it has finished.
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

extension VaultState {
    /// Prepares write-behind of these dirty chunks of a chunked file, and of the next group
    /// when free files run short; anything that stops a chunk (a full disk while making a group
    /// here) leaves it dirty for the commit to write and report.
    mutating func startWritesBehind(_ id: UInt64, _ indexes: Range<Int>) -> [WriteBehindJob] {
        guard !indexes.isEmpty else { return [] }
        var jobs = startChunkWrites(id, indexes).map(WriteBehindJob.chunk)
        if let group = writer.startGroupWrite() { jobs.append(.group(group)) }
        return jobs
    }

    private mutating func startChunkWrites(_ id: UInt64, _ indexes: Range<Int>) -> [ChunkWrite] {
        guard let item = tree.items[id], item.isFile, item.record.size >= UInt64(Self.payload), let slot = item.key else { return [] }
        // A file leaving its pack does so at the commit (storeChunk), not here.
        if case .packed = item.record.layout { return [] }
        var writes: [ChunkWrite] = []
        for index in indexes {
            let key = ChunkCache.Key(item: id, index: index)
            guard chunks.isDirty(key), let count = chunks.storedCount(key) else { continue }
            do {
                let number = try writer.allocateUsable(data: true)
                // Everything that can fail comes before the flight is registered: a commit waits
                // for every registered flight.
                let fileName: String, padding: [UInt8], oneTime: Sealer.OneTimeKey
                do {
                    fileName = try name(number)
                    padding = try random.bytes(Self.payload - count)
                    oneTime = try Sealer.OneTimeKey(.arena(slot, arena), random: random)
                } catch {
                    writer.release(number)
                    throw error
                }
                let (token, body) = chunks.startFlight(key)!
                tree.update(id) { $0.layout = .chunked }
                statistics.chunkEncrypts += 1
                writes.append(ChunkWrite(key: key, token: token, number: number, name: fileName,
                                         create: writer.allocator.needsCreate(number), body: body, padding: padding, oneTime: oneTime))
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
        if stored { writer.didStoreBehind(write.number, created: write.create) }
        guard let body = chunks.finishFlight(write.key, token: write.token) else {
            writer.release(write.number)
            return
        }
        let (id, index) = (write.key.item, write.key.index)
        guard stored, tree.items[id] != nil else {
            writer.release(write.number)
            if tree.items[id] != nil { chunks.failedFlight(write.key, body) }
            return
        }
        if let old = tree.setChunk(id, index, SealedRef(fileNumber: write.number, nonce: write.oneTime.nonce)) {
            writer.release(old.fileNumber)
        }
    }

    mutating func finishGroupWrite(_ write: GroupWrite, created: [UInt64], present: [UInt64]) {
        writer.finishGroupWrite(write, created: created, present: present)
    }
}
