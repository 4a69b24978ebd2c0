import VaultCrypto
import VaultFormat
import VaultStore

/// File contents: reads decrypt only the chunks they touch, writes change chunks in the cache,
/// and dirty chunks are sealed into free files on eviction or at the commit (R-MEM-1, R-FS-4).
extension VaultState {
    static let payload = Format.payloadSize

    /// Returns the chunks this write completed in a sequential run (ready for write-behind).
    @discardableResult
    mutating func write(_ id: UInt64, offset: UInt64, bytes: [UInt8]) throws -> Range<Int> {
        guard !readOnly else { throw VaultError.readOnly }
        _ = try file(id)
        guard !bytes.isEmpty else { return 0..<0 }
        let (end, overflow) = offset.addingReportingOverflow(UInt64(bytes.count))
        guard !overflow, end <= Self.maximumFileSize else { throw VaultError.tooLarge("file size") }
        var source = 0
        var position = offset
        while source < bytes.count {
            let index = Int(position / UInt64(Self.payload))
            let within = Int(position % UInt64(Self.payload))
            let n = min(Self.payload - within, bytes.count - source)
            let key = ChunkCache.Key(item: id, index: index)
            if cache.get(key) == nil {
                // A write that covers the whole chunk needs nothing from the old one.
                let old = within == 0 && n == Self.payload ? [] : try chunk(id, index)
                cache.put(key, bytes: old, dirty: true)
            }
            cache.modify(key) { data in
                // Overwrite what exists in place, append the rest: no zero-filling of bytes
                // that are written next (a new chunk is one copy of the write).
                let overlap = max(0, min(data.count, within + n) - within)
                if overlap > 0 { data.replaceSubrange(within..<within + overlap, with: bytes[source..<source + overlap]) }
                if overlap < n {
                    // A whole chunk is reserved only for a write that starts one: the cache
                    // counts capacity, and 2 KiB files holding 256 KiB each would make an untar
                    // of small files evict all the time.
                    if data.isEmpty && within == 0 && n >= Self.payload / 2 { data.reserveCapacity(Self.payload) }
                    if data.count < within { data.append(contentsOf: repeatElement(0, count: within - data.count)) }
                    data.append(contentsOf: bytes[source + overlap..<source + n])
                }
            }
            source += n
            position += UInt64(n)
        }
        if end > items[id]!.record.size { items[id]!.record.size = end }
        dirtyItems.insert(id)
        try evictIfNeeded()
        return chunksCompletedSequentially(id, offset, end)
    }

    mutating func truncate(_ id: UInt64, size: UInt64) throws {
        guard !readOnly else { throw VaultError.readOnly }
        let item = try file(id)
        guard size <= Self.maximumFileSize else { throw VaultError.tooLarge("file size") }
        if size < item.record.size {
            let keep = Int((size + UInt64(Self.payload) - 1) / UInt64(Self.payload))
            for (index, ref) in item.chunks where index >= keep {
                allocator.release(ref.fileNumber)
                items[id]!.chunks[index] = nil
                dirtySegments[id, default: []].insert(index / Format.chunksPerSegment)
            }
            cache.removeItem(id, fromIndex: keep)
            dropFlights(id, fromIndex: keep)
            if keep > 0 {
                // Bytes past the new end must read as zeros if the file grows again.
                let last = keep - 1
                let cut = Int(size - UInt64(last) * UInt64(Self.payload))
                let data = try chunk(id, last)
                if data.count > cut {
                    cache.modify(ChunkCache.Key(item: id, index: last)) { $0.removeSubrange(cut...) }
                }
            } else if let member = item.packedMember {
                releaseMember(id, member)
                items[id]!.record.layout = .empty
            }
        }
        items[id]!.record.size = size
        dirtyItems.insert(id)
        try evictIfNeeded()
    }

    /// Everything the format can address: 2^32 chunks.
    static let maximumFileSize = UInt64(Format.payloadSize) << 32

    func file(_ id: UInt64) throws -> Item {
        guard let item = items[id] else { throw VaultError.notFound }
        guard item.isFile else { throw VaultError.wrongType }
        return item
    }

    // MARK: Chunks

    /// The stored bytes of a chunk (empty for a hole), through the cache.
    mutating func chunk(_ id: UInt64, _ index: Int) throws -> [UInt8] {
        let key = ChunkCache.Key(item: id, index: index)
        if let cached = cache.get(key) { return cached }
        // Being written behind: newer than the stored chunk. Cached clean, since the write-behind
        // stores these very bytes (or, if it fails, puts them back dirty).
        if let flight = flights[key] {
            cache.put(key, bytes: flight.bytes, dirty: false)
            return flight.bytes
        }
        let data = try loadChunk(id, index)
        cache.put(key, bytes: data, dirty: false)
        return data
    }

    mutating func loadChunk(_ id: UInt64, _ index: Int) throws -> [UInt8] {
        let item = items[id]!
        guard let slot = item.key else { return [] }
        do {
            switch item.record.layout {
            case .empty:
                return []
            case .packed(let member):
                guard index == 0 else { return [] }
                let sealed = try openPack?.fileNumber == member.fileNumber
                    ? openPack!.unwrittenBytes(offset: Int(member.offset), count: Int(member.sealedLength))
                        ?? storage.read(name(member.fileNumber), offset: Int(member.offset), count: Int(member.sealedLength))
                    : storage.read(name(member.fileNumber), offset: Int(member.offset), count: Int(member.sealedLength))
                statistics.memberDecrypts += 1
                return try Sealer.open(sealed[...], nonce: member.nonce, key: .arena(slot, arena), label: Label.sealMember,
                                       context: Self.le(id))
            case .chunked:
                guard let load = try makeLoad(ChunkCache.Key(item: id, index: index)) else { return [] }
                return try load.run(storage)
            }
        } catch {
            throw Self.loadError(error, id, index)
        }
    }

    mutating func evictIfNeeded() throws {
        while cache.isOverLimit, let key = cache.evictionCandidate() {
            if cache.isDirty(key) { try flushChunk(key) }
            cache.remove(key)
        }
    }

    /// Seals a dirty chunk into storage: chunk 0 of a file under 256 KiB becomes a pack member,
    /// any other chunk a chunk file (copy-on-write: never over a file the committed root uses).
    mutating func flushChunk(_ key: ChunkCache.Key) throws {
        guard let item = items[key.item], item.isFile, let data = cache.get(key) else {
            cache.remove(key)
            return
        }
        if item.record.size < UInt64(Self.payload) {
            // Below 256 KiB only chunk 0 exists; truncate drops the others from the cache.
            guard key.index == 0 else { return cache.remove(key) }
            try storePacked(key.item, data)
        } else {
            try storeChunk(key.item, key.index, data)
        }
        cache.markClean(key)
        dirtyItems.insert(key.item)
    }

    private mutating func storeChunk(_ id: UInt64, _ index: Int, _ data: [UInt8]) throws {
        if case .packed = items[id]!.record.layout {
            // Chunk 0 leaves its pack for a chunk file of its own: read it before the member goes.
            if index != 0 {
                let first = try chunk(id, 0)
                cache.put(ChunkCache.Key(item: id, index: 0), bytes: first, dirty: true)
            }
            releaseMember(id, items[id]!.packedMember!)
        }
        items[id]!.record.layout = .chunked
        flights[ChunkCache.Key(item: id, index: index)] = nil  // this write is newer than any behind
        let (nonce, file) = try Sealer.sealEnvelope(kind: .chunk, body: data[...], key: .arena(items[id]!.key!, arena),
                                                    label: Label.sealChunk, context: Self.le(id) + Self.le(UInt64(index)),
                                                    random: random)
        statistics.chunkEncrypts += 1
        let number = try store(file, data: true)
        if let old = items[id]!.chunks[index] { allocator.release(old.fileNumber) }
        items[id]!.chunks[index] = SealedRef(fileNumber: number, nonce: nonce)
        dirtySegments[id, default: []].insert(index / Format.chunksPerSegment)
    }

    private mutating func storePacked(_ id: UInt64, _ data: [UInt8]) throws {
        dropFlights(id)
        for (index, ref) in items[id]!.chunks {
            allocator.release(ref.fileNumber)
            dirtySegments[id, default: []].insert(index / Format.chunksPerSegment)
        }
        items[id]!.chunks = [:]
        if let member = items[id]!.packedMember { releaseMember(id, member) }
        guard !data.isEmpty else {
            items[id]!.record.layout = .empty
            return
        }
        let (nonce, sealed) = try Sealer.seal(data[...], key: .arena(items[id]!.key!, arena), label: Label.sealMember,
                                              context: Self.le(id), random: random)
        statistics.memberEncrypts += 1
        let (number, offset) = try placeMember(sealed)
        let member = ItemRecord.Member(fileNumber: number, offset: UInt32(offset), sealedLength: UInt32(sealed.count), nonce: nonce)
        items[id]!.record.layout = .packed(member)
        addMember(id, member)
    }

    /// Puts sealed member bytes into the open pack, starting a new pack when it is full.
    mutating func placeMember(_ sealed: [UInt8]) throws -> (fileNumber: UInt64, offset: Int) {
        if let pack = openPack, !pack.fits(sealed.count) {
            try writeOpenPack()
            openPack = nil
        }
        if openPack == nil { openPack = try chooseOpenPack(needing: sealed.count) }
        let offset = openPack!.append(sealed)
        return (openPack!.fileNumber, offset)
    }

    /// The existing pack with the most free tail that fits, or a new one.
    private mutating func chooseOpenPack(needing count: Int) throws -> OpenPack {
        let candidates = packs.filter { Format.fileSize - $0.value.reservedEnd >= count }
            .sorted { ($0.value.reservedEnd, $0.key) < ($1.value.reservedEnd, $1.key) }
        // A pack file that is missing or of the wrong size takes no new members: writing them
        // would fail every commit from now on. Its own items report the damage when read.
        for (number, info) in candidates where (try? storage.read(try name(number), offset: 0, count: 0)) != nil {
            return OpenPack(existing: number, reservedEnd: info.reservedEnd)
        }
        let number = try allocateUsable(data: true)
        packs[number] = PackInfo()
        return OpenPack(newFile: number, randomImage: try random.bytes(Format.fileSize))
    }

    /// Writes the open pack's new bytes: the whole image for a new pack, the new members otherwise.
    mutating func writeOpenPack() throws {
        guard var pack = openPack, pack.hasPendingWrites else { return }
        if pack.image != nil, packs[pack.fileNumber]?.members.isEmpty ?? true {
            // A new pack whose members all went before it was written (a file deleted after its
            // write failed on a full disk): nothing to write, and the file is free again.
            packs[pack.fileNumber] = nil
            allocator.release(pack.fileNumber)
            openPack = nil
            return
        }
        if let image = pack.image {
            try storeFile(pack.fileNumber, image)
        } else {
            for write in pack.pending { try storage.write(try name(pack.fileNumber), offset: write.offset, bytes: write.bytes) }
            unsynced.insert(pack.fileNumber)
        }
        pack.didWrite()
        openPack = pack
    }

    mutating func addMember(_ id: UInt64, _ member: ItemRecord.Member) {
        let end = Int(member.offset) + Int(member.sealedLength)
        packs[member.fileNumber, default: PackInfo()].liveBytes += Int(member.sealedLength)
        packs[member.fileNumber]!.members.insert(id)
        packs[member.fileNumber]!.reservedEnd = max(packs[member.fileNumber]!.reservedEnd, end)
    }

    mutating func releaseMember(_ id: UInt64, _ member: ItemRecord.Member) {
        guard packs[member.fileNumber] != nil else { return }
        packs[member.fileNumber]!.liveBytes -= Int(member.sealedLength)
        packs[member.fileNumber]!.members.remove(id)
        if packs[member.fileNumber]!.members.isEmpty && openPack?.fileNumber != member.fileNumber {
            packs[member.fileNumber] = nil
            allocator.release(member.fileNumber)
        }
    }

    /// Writes a whole file into a newly allocated number (copy-on-write); returns the number.
    /// `data`: a chunk, which keeps out of the reserve of existing free files (`reservedFiles`).
    mutating func store(_ file: [UInt8], data: Bool = false) throws -> UInt64 {
        let number = try allocateUsable(data: data)
        do { try storeFile(number, file) } catch {
            allocator.release(number)
            throw error
        }
        return number
    }

    /// A free number whose file can take new bytes. The vault's files are its own, but the
    /// folder is not: a free file that someone removed is made again when written; one that is
    /// not a regular file of the storage size is damage, never written (R-SEC-4), and skipped
    /// (it stays handed out until the session ends). Either way one damaged block does not stop
    /// every later commit.
    mutating func allocateUsable(data: Bool = false) throws -> UInt64 {
        while true {
            if data && allocator.freeCount <= Self.reservedFiles {
                // Data never takes the last free files: a new group is made, whole, first. If
                // the disk cannot hold it, this write fails with ENOSPC now, the reserve stays
                // for the index pages of a delete, and no later commit needs room for the group.
                let numbers = allocator.makeGroup()
                do { try createGroupFiles(numbers) } catch {
                    try? dropUnusedNewGroups()
                    throw error
                }
            }
            let number = allocator.allocate()
            let name = try name(number)
            if allocator.needsCreate(number) {
                // A new group's file is made at its name: whatever is there already is not ours.
                guard try storage.entryExists(name) else { return number }
                allocator.markCreated(number)
                continue
            }
            if (try? storage.read(name, offset: 0, count: 0)) != nil { return number }
            if try !storage.entryExists(name) {
                allocator.markMissing(number)
                return number
            }
        }
    }

    /// Makes the files of a new group (random bytes).
    private mutating func createGroupFiles(_ numbers: Range<UInt64>) throws {
        for other in numbers where allocator.needsCreate(other) {
            // Something that is not ours at the name is never replaced (R-SEC-4).
            if try storage.entryExists(try name(other)) {
                allocator.markCreated(other)
                continue
            }
            try storeFile(other, try random.bytes(Format.fileSize))
        }
    }

    mutating func storeFile(_ number: UInt64, _ file: [UInt8]) throws {
        if allocator.needsCreate(number) {
            try storage.create(try name(number), contents: file, durable: false)
            allocator.markCreated(number)
            createdSinceCommit = true
        } else {
            try storage.write(try name(number), offset: 0, bytes: file)
        }
        unsynced.insert(number)
    }

    /// Free files which data never takes (a group is made before): on a full disk they let a delete commit
    /// (its index pages are written copy-on-write, while the deleted data's files are still
    /// referenced by the committed root).
    static let reservedFiles = 4

    static func le(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
}
