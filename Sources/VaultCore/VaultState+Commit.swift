import VaultCrypto
import VaultFormat
import VaultStore

/// The commit protocol of docs/FORMAT.md §9.2: data first, synced; then the root into the slot
/// that holds the older one. A crash anywhere leaves the old root or the new one.
extension VaultState {
    /// Largest record a page can hold with room to spare; operations refuse to grow past it.
    static let maximumRecordSize = 64 << 10
    /// Packs holding less than this are emptied into the open pack at a commit.
    static let compactionThreshold = Format.fileSize / 4

    /// Seals every dirty chunk in key order. The keys are sorted once, not once per chunk (a
    /// commit after a 256 MiB write flushes 1,024 chunks). Flushing chunk i > 0 of a packed file
    /// makes its chunk 0 dirty, which comes next, as it would in a fresh sorted list.
    private mutating func flushDirtyChunks() throws {
        var keys = cache.dirtyKeys
        while !keys.isEmpty {
            for key in keys where cache.isDirty(key) {
                try flushChunk(key)
                let first = ChunkCache.Key(item: key.item, index: 0)
                if cache.isDirty(first) { try flushChunk(first) }
            }
            keys = cache.dirtyKeys
        }
    }

    /// Makes every change durable. `final` is the commit at lock: covers are refreshed if any commit
    /// came since they last were (R-COV-3).
    mutating func commit(final: Bool = false) throws {
        guard !readOnly, !isLocked else { return }
        try normalizeLayouts()
        try flushDirtyChunks()
        // Housekeeping rides on a commit that writes anyway: a session that changed nothing
        // leaves the storage as it found it.
        if hasChanges { try compactPacks() }
        try writeOpenPack()
        let changed = hasChanges || !unsynced.isEmpty
        guard changed || (final && committedSinceCoverRefresh) else { return }
        if changed {
            try writeRecords()
            try writeDirtyPages()
        }
        try dropUnusedNewGroups()
        try createUnwrittenFiles()
        try syncData()
        let refresh = !isNew && (final || coversAreDue)
        if refresh { try refreshCovers() } else if isNew { coversRefreshedAt = clock.now() }
        if changed {
            try writeRoot()
            committedSinceCoverRefresh = !refresh
        }
    }

    private var coversAreDue: Bool {
        guard let last = coversRefreshedAt else { return true }
        return clock.now() - last >= Self.coverRefreshInterval
    }

    /// A file's layout follows its size: a pack member below 256 KiB, chunk files from there on.
    private mutating func normalizeLayouts() throws {
        for id in dirtyItems {
            guard let item = items[id], item.isFile else { continue }
            let small = item.record.size < UInt64(Self.payload)
            switch item.record.layout {
            case .packed where !small, .chunked where small:
                let first = try chunk(id, 0)
                cache.put(ChunkCache.Key(item: id, index: 0), bytes: first, dirty: true)
            default: break
            }
        }
    }

    /// Moves the members of nearly empty packs into the open pack, so that deleted small files
    /// give their space back. Only packs that lost members (live bytes below the end they
    /// reserve): a pack that is merely small would move into a new pack at every session.
    private mutating func compactPacks() throws {
        let sparse = packs.filter { $0.value.liveBytes > 0 && $0.value.liveBytes < Self.compactionThreshold
                                    && $0.value.liveBytes < $0.value.reservedEnd
                                    && $0.key != openPack?.fileNumber }.map(\.key).sorted()
        for number in sparse.prefix(8) {
            // Moving the members of an earlier pack may have made this one the open pack (the one
            // with the most free tail): members just placed in it are not on disk yet, and reading
            // them from there would move random bytes (found by tools/stress under CPU load).
            guard number != openPack?.fileNumber else { continue }
            let members = packs[number]!.members.sorted().compactMap { id in items[id]?.packedMember.map { (id, $0) } }
            // A pack that cannot be read (missing, wrong size) stays where it is: its items report
            // the damage when read, and the rest of the vault still commits.
            guard let contents = try? members.map({ id, old in
                try storage.read(try name(number), offset: Int(old.offset), count: Int(old.sealedLength))
            }) else { continue }
            for ((id, old), sealed) in zip(members, contents) {
                // Housekeeping: on a full disk it waits, the commit goes on.
                guard let (newNumber, offset) = try? placeMember(sealed) else { return }
                var moved = old
                moved.fileNumber = newNumber
                moved.offset = UInt32(offset)
                releaseMember(id, old)
                items[id]!.record.layout = .packed(moved)
                addMember(id, moved)
                dirtyItems.insert(id)
            }
        }
    }

    /// Marks the pages of every changed record; items without names are not written (an unlinked
    /// file still open lives in memory only).
    private mutating func writeRecords() throws {
        for key in removedKeys { pageTable.remove(key) }
        removedKeys = []
        for id in dirtyItems {
            let segments = dirtySegments[id] ?? []
            if let item = items[id], id == Format.rootItemID || !item.record.links.isEmpty {
                pageTable.touch(.item(id))
                let present = item.segmentIndexes
                for segment in segments {
                    if present.contains(segment) { pageTable.touch(.segment(id, segment)) } else { pageTable.remove(.segment(id, segment)) }
                }
            } else {
                pageTable.remove(.item(id))
                let present = items[id]?.segmentIndexes ?? []
                for segment in segments.union(present) { pageTable.remove(.segment(id, segment)) }
            }
        }
    }

    private func encodeRecord(_ key: RecordKey) -> [UInt8] {
        let item = items[key.itemID]!
        if let segment = key.segmentIndex { return ChunkSegment.encode(item.segmentEntries(segment)) }
        var record = item.record
        if let slot = item.key { record.itemKey = arena.bytes(slot) }
        defer { Sealer.wipe(&record.itemKey) }
        return record.encode()
    }

    private mutating func writeDirtyPages() throws {
        var written: [Int: [(ref: SealedRef, keys: [RecordKey])]] = [:]
        let limit = Format.payloadSize - IndexPage.headerSize
        for (i, page) in pageTable.pages.enumerated() where page.dirty {
            var pieces: [[(key: RecordKey, value: [UInt8])]] = [[]]
            var size = 0
            for key in page.keys {
                let value = encodeRecord(key)
                let cost = RecordKey.overhead + value.count
                if size + cost > limit && !pieces[pieces.count - 1].isEmpty {
                    pieces.append([])
                    size = 0
                }
                pieces[pieces.count - 1].append((key, value))
                size += cost
            }
            for piece in pieces where !piece.isEmpty {
                var body = IndexPage.encode(piece)
                defer { Sealer.wipe(&body) }
                let (nonce, file) = try Sealer.sealEnvelope(kind: .indexPage, body: body[...], key: .secret(pageKey),
                                                            label: Label.sealIndexPage, context: [], random: random)
                let number = try store(file)
                statistics.pageWrites += 1
                written[i, default: []].append((SealedRef(fileNumber: number, nonce: nonce), piece.map(\.key)))
            }
        }
        for ref in pageTable.replaceDirty(with: written) { allocator.release(ref.fileNumber) }
    }

    /// New groups that nothing went into are not kept: on a full disk, a delete of what filled
    /// them must still commit without making their missing files.
    mutating func dropUnusedNewGroups() throws {
        let (numbers, existing) = allocator.dropUnusedNewGroups()
        for number in existing { try storage.remove(try name(number)) }
        unsynced.subtract(numbers)
        if !existing.isEmpty { createdSinceCommit = true }
    }

    /// Files of new groups that no data went into get random bytes, so every group is whole.
    private mutating func createUnwrittenFiles() throws {
        for number in allocator.unwritten.sorted() where number >= Format.indexSlotCount {
            // Something that is not ours at the name is never replaced (R-SEC-4): the number is
            // skipped (allocateUsable never hands it out), the group has one file less.
            if try storage.entryExists(try name(number)) {
                allocator.markCreated(number)
                continue
            }
            try storeFile(number, try random.bytes(Format.fileSize))
        }
    }

    private mutating func syncData() throws {
        if !unsynced.isEmpty { try storage.sync(try unsynced.sorted().map { try name($0) }) }
        if createdSinceCommit { try storage.syncFolder() }
        unsynced = []
        createdSinceCommit = false
    }

    private mutating func refreshCovers() throws {
        var written: [String] = []
        var created = false
        for number in allocator.coverNumbers {
            let name = try name(number)
            if (try? storage.read(name, offset: 0, count: 0)) != nil {
                try storage.write(name, offset: 0, bytes: try random.bytes(Format.fileSize))
                written.append(name)
            } else if try !storage.entryExists(name) {
                // A cover removed behind the vault's back is made again; one of the wrong size or
                // type is damage and left alone (R-SEC-4). Neither stops the commit.
                try storage.create(name, contents: try random.bytes(Format.fileSize), durable: true)
                created = true
            }
        }
        try storage.sync(written)
        if created { try storage.syncFolder() }
        coversRefreshedAt = clock.now()
        committedSinceCoverRefresh = false
        statistics.coverRefreshes += 1
    }

    /// The commit point: root g+1 into slot (g+1) mod 2, then the files it released go.
    private mutating func writeRoot() throws {
        let generation = self.generation + 1
        let slot = generation % Format.indexSlotCount
        // Groups leave the allocator here, before the commit point: until their files are gone
        // they are listed in every root written, so that neither a failed commit nor a failed
        // removal strands them.
        releasingFiles += allocator.takeReleasableGroups()
        let releasing = releasingFiles
        var root = IndexRoot(generation: generation, vaultKey: vaultKey.copyBytes(), nextFileNumber: allocator.nextFileNumber,
                             nextItemID: nextItemID, coverCount: allocator.coverCount, ownedGroups: allocator.ownedGroups,
                             releasing: releasing, pages: pageTable.pages.map { $0.ref! })
        var body = root.encode()
        Sealer.wipe(&root.vaultKey)
        defer { Sealer.wipe(&body) }
        guard body.count <= Format.payloadSize else { throw VaultError.tooLarge("the vault's index has too many pages") }
        let (_, file) = try Sealer.sealEnvelope(kind: .indexRoot, body: body[...], key: .secret(secrets.indexKey),
                                                label: Label.sealIndexRoot, context: [UInt8(slot)], random: random)
        let slotName = try name(slot)
        if allocator.needsCreate(slot) {
            try createSlot(slotName, slot, file)
        } else {
            try storage.write(slotName, offset: 0, bytes: file)
            try storage.sync([slotName])
        }
        // The commit point is passed: the state in memory is generation g+1's from here on,
        // whatever the clean-up below meets.
        self.generation = generation
        allocator.didCommit()
        for (number, info) in packs {
            packs[number]!.reservedEnd = info.members.reduce(0) { end, id in
                guard let member = items[id]?.packedMember else { return end }
                return max(end, Int(member.offset) + Int(member.sealedLength))
            }
        }
        if let pack = openPack { openPack = OpenPack(existing: pack.fileNumber, reservedEnd: packs[pack.fileNumber]?.reservedEnd ?? 0) }
        dirtyItems = []
        dirtySegments = [:]
        statistics.commits += 1
        // Group 0's other slot is made only now, so that a crash never leaves a slot that does
        // not open beside no slot that does (which would read as damage).
        let other = 1 - slot
        if allocator.needsCreate(other) { try createSlot(try name(other), other, try random.bytes(Format.fileSize)) }
        for number in releasing { try storage.remove(try name(number)) }
        if !releasing.isEmpty { try storage.syncFolder() }
        releasingFiles = []
    }

    /// Makes a slot file and syncs its name. The file exists once `create` returns, whatever
    /// happens next: a commit that goes on after a failed folder sync writes into it rather than
    /// making it again (`exists`), and syncs the folder before its own root.
    private mutating func createSlot(_ name: String, _ slot: UInt64, _ file: [UInt8]) throws {
        try storage.create(name, contents: file, durable: true)
        allocator.markCreated(slot)
        createdSinceCommit = true
        try storage.syncFolder()
        createdSinceCommit = false
    }
}
