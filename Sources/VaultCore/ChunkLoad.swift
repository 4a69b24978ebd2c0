import Dispatch
import VaultCrypto
import VaultFormat
import VaultStore

/// Reading a stored chunk without the vault's lock: its reference and one-time key are taken
/// under the lock, the storage read and the AES outside it, and the result is cached under it.
/// Two threads can then decrypt two chunks at once, and a sequential reader's next chunks are
/// loaded ahead while the kernel copies out the current one. The chunk is decrypted straight
/// into a block of the cache's pool, which the cache then keeps: no copy, and no plaintext in
/// ordinary memory.
struct ChunkLoad: Sendable {
    /// What opens the chunk, taken under the lock: format 1's one-time key from the item key and
    /// the recorded nonce; format 2's chunk key, copied out of the arena (the nonce is in the file).
    enum Opener: Sendable {
        case formatOne(Sealer.OneTimeKey)
        case formatTwo(SecretBytes)
    }

    let key: ChunkCache.Key
    let ref: StoredRef
    let name: String
    let opener: Opener
    let pool: PlaintextPool
    /// A format-1 chunk of an item that a merge gave a new ID: the ID its seal is bound to.
    var sealedAs: UInt64?
    /// A sequential reader's chunk: its file is read past the kernel's page cache
    /// (`StorageFolder.readStreaming`).
    var streaming = false

    func run(_ storage: any StorageFolder) throws -> PlaintextBuffer {
        var recorded: Sealer.OneTimeKey?, chunkKey: SecretBytes?
        switch opener {
        case .formatOne(let oneTime): recorded = oneTime
        case .formatTwo(let key): chunkKey = key
        }
        defer {
            recorded?.subkey.wipe()
            chunkKey?.wipe()
        }
        guard let file = try streaming ? storage.readStreaming(name) : storage.read(name)?[...] else { throw StoreError.unusableFile("chunk") }
        let body = PlaintextBuffer(pool: pool, capacity: ChunkOffsets.chunkSize)
        guard let chunkKey else {
            try Sealer.openEnvelope(file, expectedNonce: ref.nonce, kind: .chunk, with: recorded!,
                                    seal: .chunk(item: sealedAs ?? key.item, index: key.index), into: body)
            return body
        }
        guard file.count == Format.fileSize else { throw CryptoError.authenticationFailed }
        let oneTime = try Sealer.OneTimeKey(.secret(chunkKey), nonce: Array(file.prefix(Format.sealNonceSize)))
        defer { oneTime.subkey.wipe() }
        try Sealer.openEnvelope(file, expectedNonce: nil, kind: .chunk, version: StorageFormat.two.envelopeVersion, with: oneTime,
                                seal: .chunkV2(index: key.index), into: body)
        return body
    }
}

/// A load in progress: other readers of the chunk wait for it instead of loading it again.
final class LoadInProgress: Sendable {
    private let done = DispatchGroup()
    init() { done.enter() }
    func finish() { done.leave() }
    func wait() { done.wait() }
}

/// What a reader does next for one chunk.
enum ChunkStep {
    /// The chunk's stored bytes within the range read (empty for a hole), lent, and loads to
    /// run ahead in the background.
    case ready(PlaintextSlice, ahead: [ChunkLoad])
    /// The chunk to load on the reader's thread, and loads to run ahead in the background.
    case load(ChunkLoad, ahead: [ChunkLoad])
    case wait(LoadInProgress)

    var ahead: [ChunkLoad] {
        switch self {
        case .ready(_, let ahead), .load(_, let ahead): ahead
        case .wait: []
        }
    }
}

extension VaultState {
    /// The next step for reading `range` of chunk `index` of `id`; `sequential` says whether the
    /// read continues the previous one (then the chunks after it are loaded ahead, and those
    /// behind it leave the cache).
    mutating func chunkStep(_ id: UInt64, _ index: Int, _ range: Range<Int>, sequential: Bool) throws -> ChunkStep {
        // Evicted since the read began (a lookup on another thread): back by its ID.
        try fault(id)
        let item = try file(id)
        let key = ChunkCache.Key(item: id, index: index)
        if case .chunked = item.record.layout, !chunks.isInMemory(key), item.chunks[index] != nil {
            if let loading = chunks.loading(key) { return .wait(loading) }
            // The kernel may ask for a whole chunk at a time (`cat`, `cp`, fio's 1 MiB reads:
            // one 256 KiB request per chunk): such a reader meets each chunk here, and the chunks
            // behind must leave here too. It loads ahead from its second chunk on: a first read
            // at 0 may be all there is (`file`, `head`), as a half-chunk reader's first is.
            if sequential { chunks.dropRead(behind: key) }
            let load: ChunkLoad
            do {
                load = try startLoad(key, streaming: sequential)!
            } catch {
                throw Self.loadError(error, id, index)
            }
            return .load(load, ahead: sequential && index > 0 ? loadsAhead(item, id, after: index) : [])
        }
        if !sequential { return .ready(try chunk(id, index, in: range), ahead: []) }
        let bytes = try chunk(id, index, in: range)
        chunks.dropRead(behind: key)
        return .ready(bytes, ahead: loadsAhead(item, id, after: index))
    }

    /// Loads of the `ChunkStore.readAhead` chunks after `index` that are stored, not in memory
    /// and not loading; one that cannot start is left to the reader's own load.
    private mutating func loadsAhead(_ item: Item, _ id: UInt64, after index: Int) -> [ChunkLoad] {
        var ahead: [ChunkLoad] = []
        for next in index + 1...index + ChunkStore.readAhead {
            let nextKey = ChunkCache.Key(item: id, index: next)
            guard item.chunks[next] != nil, !chunks.isInMemory(nextKey), chunks.loading(nextKey) == nil,
                  let load = try? startLoad(nextKey, streaming: true) else { continue }
            ahead.append(load)
        }
        return ahead
    }

    /// `makeLoad`, registered so that other readers wait for it instead of loading again.
    private mutating func startLoad(_ key: ChunkCache.Key, streaming: Bool) throws -> ChunkLoad? {
        guard var load = try makeLoad(key) else { return nil }
        load.streaming = streaming
        chunks.startLoad(key)
        return load
    }

    /// A load of a stored chunk; nil for a hole. `sealedAs`: the ID format 1 bound it to, when
    /// the item has another now (`takeInKeptFiles`).
    mutating func makeLoad(_ key: ChunkCache.Key, sealedAs: UInt64? = nil) throws -> ChunkLoad? {
        guard let item = tree.items[key.item], let ref = item.chunks[key.index] else { return nil }
        let opener: ChunkLoad.Opener
        if let slot = ref.key {
            var bytes = session.arena.bytes(slot)
            defer { Sealer.wipe(&bytes) }
            opener = .formatTwo(try SecretBytes(copying: bytes))
        } else {
            guard let slot = item.key else { return nil }
            opener = .formatOne(try Sealer.OneTimeKey(.arena(slot, session.arena), nonce: ref.nonce))
        }
        statistics.chunkDecrypts += 1
        return ChunkLoad(key: key, ref: ref, name: try name(ref.fileNumber), opener: opener, pool: chunks.cache.pool, sealedAs: sealedAs)
    }

    /// Where a read of `offset..<offset + count` ends (at the file's end at most), whether it
    /// continues the file's previous read or starts at 0 (then chunks are loaded ahead), and
    /// whether it is at random (`ChunkStore.noteRead`).
    mutating func startRead(_ id: UInt64, offset: UInt64, count: Int) throws -> (end: UInt64, sequential: Bool, atRandom: Bool) {
        try fault(id)
        let size = try file(id).record.size
        guard offset < size, count > 0 else { return (offset, false, false) }
        let end = min(offset + UInt64(count), size)
        let (sequential, atRandom) = chunks.noteRead(id, offset: offset, end: end)
        return (end, sequential, atRandom)
    }

    /// Caches what a load read, if the chunk has not changed meanwhile, and lends the bytes of
    /// `range` it holds (shorter, or empty, past its end): the bytes as stored when
    /// the read began (a write since then is a later event). Returns nil when the load failed
    /// because the chunk moved while it ran: its old file, free again, may have been taken and
    /// rewritten, so the reader reads again. Any other failure is the error a reader sees (a
    /// load ahead drops it: the reader's own load reports it).
    mutating func finishLoad(_ load: ChunkLoad, _ result: Result<PlaintextBuffer, any Error>,
                             range: Range<Int> = 0..<0) throws -> PlaintextSlice? {
        chunks.endLoad(load.key)
        let unchanged = !isLocked && tree.items[load.key.item]?.chunks[load.key.index] == load.ref
        let buffer: PlaintextBuffer
        do {
            buffer = try result.get()
        } catch {
            if isLocked { throw VaultError.locked }
            guard unchanged else { return nil }
            throw Self.loadError(error, load.key.item, load.key.index)
        }
        // Lent: once cached, a later write changes a copy (`ChunkCache.change`).
        let bytes = PlaintextSlice(buffer, within: range)
        guard unchanged, !chunks.isInMemory(load.key) else { return bytes }
        chunks.put(load.key, buffer: buffer, dirty: false)
        try evictIfNeeded()
        return bytes
    }

    /// What a reader sees when a stored chunk does not open.
    static func loadError(_ error: any Error, _ id: UInt64, _ index: Int) -> any Error {
        switch error {
        case StoreError.noSpace: return VaultError.store(.noSpace)
        case StoreError.system(let operation, let errno): return VaultError.store(.system(operation: operation, errno: errno))
        case FormatError.newerVersion(let version): return VaultError.newerFormat(version)
        case is StoreError, is CryptoError, is FormatError: return VaultError.damagedData("item \(id), chunk \(index)")
        default: return error
        }
    }
}
