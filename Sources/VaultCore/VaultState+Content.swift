import VaultCrypto
import VaultFormat
import VaultStore

/// File contents: reads decrypt only the chunks they touch, writes change chunks in the cache,
/// and dirty chunks are sealed into free files on eviction or at the commit (R-MEM-1, R-FS-4).
extension VaultState {
    static let payload = ChunkOffsets.chunkSize

    /// Returns the chunks this write completed in a sequential run (ready for write-behind).
    @discardableResult
    mutating func write(_ id: UInt64, offset: UInt64, bytes: RawSpan) throws -> Range<Int> {
        try checkWritable()
        _ = try file(id)
        guard !bytes.isEmpty else { return 0..<0 }
        let (end, overflow) = offset.addingReportingOverflow(UInt64(bytes.byteCount))
        guard !overflow, end <= ChunkOffsets.maximumFileSize else { throw VaultError.tooLarge("file size") }
        chunks.contentChanges(id)
        for piece in ChunkOffsets.pieces(from: offset, to: end) {
            let (within, n, source) = (piece.range.lowerBound, piece.range.count, piece.position)
            let key = ChunkCache.Key(item: id, index: piece.index)
            if !chunks.contains(key) {
                // A write that covers the whole chunk needs nothing from the old one.
                if within == 0 && n == Self.payload {
                    chunks.put(key, bytes: [], dirty: true, capacity: Self.payload)
                } else {
                    try cacheChunk(id, piece.index)
                }
            }
            // In place in the cache's block. A whole chunk is reserved only for a write that
            // starts one: the cache counts blocks, and 2 KiB files holding 256 KiB each would
            // make an untar of small files evict all the time.
            chunks.write(key, bytes.extracting(source..<source + n), at: within, reserveChunk: within == 0 && n >= Self.payload / 2)
        }
        let size = tree.items[id]!.record.size
        tree.update(id) { if end > size { $0.size = end } }
        try evictIfNeeded()
        return chunks.chunksCompletedSequentially(id, offset, end)
    }

    mutating func truncate(_ id: UInt64, size: UInt64) throws {
        try checkWritable()
        let item = try file(id)
        guard size <= ChunkOffsets.maximumFileSize else { throw VaultError.tooLarge("file size") }
        chunks.contentChanges(id)
        if size < item.record.size {
            let keep = ChunkOffsets.chunkCount(forSize: size)
            for (index, ref) in item.chunks where index >= keep {
                release(ref)
                tree.setChunk(id, index, nil)
            }
            chunks.removeChunks(of: id, from: keep)
            if keep > 0 {
                // Bytes past the new end must read as zeros if the file grows again.
                let last = keep - 1
                let cut = Int(size - ChunkOffsets.start(ofChunk: last))
                try cacheChunk(id, last)
                chunks.truncate(ChunkCache.Key(item: id, index: last), to: cut)
            } else if let member = item.packedMember {
                releaseMember(id, member)
                forgetMemberKey(id)
                tree.update(id) { $0.layout = .empty }
            }
        }
        tree.update(id) { $0.size = size }
        try evictIfNeeded()
    }

    // MARK: Chunks

    /// The stored bytes of a chunk within `range` (shorter, or empty, past its end), through the
    /// cache, lent.
    mutating func chunk(_ id: UInt64, _ index: Int, in range: Range<Int>) throws -> PlaintextSlice {
        try cacheChunk(id, index)
        return chunks.cached(ChunkCache.Key(item: id, index: index), in: range) ?? .zeros(0)
    }

    /// Brings a chunk into the cache (empty for a hole), unless its newest bytes are in memory.
    /// `sealedAs`: the ID format 1 bound the item's seals to, when it has another now.
    mutating func cacheChunk(_ id: UInt64, _ index: Int, sealedAs: UInt64? = nil) throws {
        let key = ChunkCache.Key(item: id, index: index)
        guard chunks.cached(key, in: 0..<0) == nil else { return }
        let item = tree.items[id]!
        // Decrypted straight into the cache's memory: no plaintext copy, nothing to wipe.
        do {
            switch item.record.layout {
            case .chunked:
                if let load = try makeLoad(key, sealedAs: sealedAs) { return chunks.put(key, buffer: try load.run(storage), dirty: false) }
            case .packed(let member) where index == 0:
                return chunks.put(key, buffer: try openMember(sealedAs ?? id, item, member, try sealedMember(member), in: chunks.cache.pool),
                                  dirty: false)
            default:
                break
            }
        } catch {
            throw Self.loadError(error, id, index)
        }
        chunks.put(key, bytes: [], dirty: false)
    }

    /// A chunk's stored bytes, decrypted into an array (fsck).
    mutating func loadChunk(_ id: UInt64, _ index: Int) throws -> [UInt8] {
        let item = tree.items[id]!
        guard item.isFile else { return [] }
        do {
            switch item.record.layout {
            case .empty:
                return []
            case .packed(let member):
                guard index == 0 else { return [] }
                return try openMember(id, item, member, try sealedMember(member))
            case .chunked:
                guard let load = try makeLoad(ChunkCache.Key(item: id, index: index)) else { return [] }
                return try load.run(storage).allBytes
            }
        } catch {
            throw Self.loadError(error, id, index)
        }
    }

    /// A member's sealed bytes, from the open pack while it is not written yet.
    private mutating func sealedMember(_ member: ItemRecord.Member) throws -> [UInt8] {
        statistics.memberDecrypts += 1
        return try packs.unwrittenBytes(member)
            ?? storage.read(name(member.fileNumber), offset: Int(member.offset), count: Int(member.sealedLength))
    }

    /// Between commits, a dirty chunk that would need a new group stays, the cache over its
    /// limit, until `Vault` has the group made outside the lock (`Vault+DataRoom`).
    mutating func evictIfNeeded() throws {
        while let key = chunks.evictionCandidate {
            if chunks.isDirty(key) {
                guard writer.mayTakeData else { return }
                do { try flushChunk(key) } catch is FileWriter.GroupNeeded { return }
            }
            chunks.remove(key)
        }
    }

    /// Dirty chunks wait in a cache over its limit for a group to be made outside the lock.
    var evictionWaitsForGroup: Bool { chunks.isOverLimit && !writer.mayTakeData }

    /// Runs a request of the data path (write, truncate, a load cached), after which `Vault`
    /// makes any group its data waits for outside the lock (`Vault+DataRoom`): data that finds
    /// the free files down to the reserve waits, dirty, instead of making a group here.
    mutating func onDataPath<R>(_ body: (inout VaultState) throws -> R) rethrows -> R {
        writer.groupsUnderLock = false
        defer { writer.groupsUnderLock = true }
        return try body(&self)
    }

    /// Seals a dirty chunk into storage: chunk 0 of a file under 256 KiB becomes a pack member,
    /// any other chunk a chunk file (copy-on-write: never over a file the committed root uses).
    mutating func flushChunk(_ key: ChunkCache.Key) throws {
        guard let item = tree.items[key.item], item.isFile, var data = chunks.get(key) else {
            chunks.remove(key)
            return
        }
        defer { data.wipe() }
        if item.record.size < UInt64(Self.payload) {
            // Below 256 KiB only chunk 0 exists; truncate drops the others from the cache.
            guard key.index == 0 else { return chunks.remove(key) }
            try storePacked(key.item, data)
        } else {
            try storeChunk(key.item, key.index, data)
        }
        chunks.markClean(key)
        tree.dirtyItems.insert(key.item)
    }

    private mutating func storeChunk(_ id: UInt64, _ index: Int, _ data: [UInt8]) throws {
        if let member = tree.items[id]!.packedMember {
            // Chunk 0 leaves its pack for a chunk file of its own: read it before the member goes.
            if index != 0 {
                try cacheChunk(id, 0)
                chunks.markDirty(ChunkCache.Key(item: id, index: 0))
            }
            releaseMember(id, member)
            forgetMemberKey(id)
        }
        tree.update(id) { $0.layout = .chunked }
        chunks.dropFlight(ChunkCache.Key(item: id, index: index))  // this write is newer than any behind
        if format == .two { return try storeChunkV2(id, index, data) }
        let (nonce, file) = try Sealer.sealEnvelope(kind: .chunk, body: data[...], key: .arena(tree.items[id]!.key!, session.arena),
                                                    seal: .chunk(item: id, index: index), random: session.random)
        statistics.chunkEncrypts += 1
        let number = try writer.store(file, data: true)
        if let old = tree.setChunk(id, index, StoredRef(fileNumber: number, nonce: nonce)) { release(old) }
    }

    private mutating func storePacked(_ id: UInt64, _ data: [UInt8]) throws {
        // A pinned pack takes no member below its pinned end (`PackStore.pinWhole`).
        try readPinsIfUnread()
        chunks.dropFlights(id)
        for ref in tree.removeAllChunks(id).values { release(ref) }
        if let member = tree.items[id]!.packedMember { releaseMember(id, member) }
        guard !data.isEmpty else {
            forgetMemberKey(id)
            tree.update(id) { $0.layout = .empty }
            return
        }
        if format == .two { return try storePackedV2(id, data) }
        let (nonce, sealed) = try Sealer.seal(data[...], key: .arena(tree.items[id]!.key!, session.arena), seal: .member(item: id), random: session.random)
        statistics.memberEncrypts += 1
        let (number, offset) = try packs.place(sealed, writer: &writer)
        let member = ItemRecord.Member(fileNumber: number, offset: UInt32(offset), sealedLength: UInt32(sealed.count), nonce: nonce)
        tree.update(id) { $0.layout = .packed(member) }
        packs.addMember(id, member)
    }
}
