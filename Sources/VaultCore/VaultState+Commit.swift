import VaultCrypto
import VaultFormat
import VaultStore

/// The commit protocol of docs/FORMAT.md §9.2, across the parts: data first (chunks, packs,
/// pages, new groups), synced; then the root into the slot that holds the older one. A crash
/// anywhere leaves the old root or the new one.
extension VaultState {
    /// Makes every change durable. `final` is the commit at lock: covers are refreshed if any commit
    /// came since they last were (R-COV-3).
    mutating func commit(final: Bool = false) throws {
        guard !session.readOnly, !isLocked else { return }
        // A new vault's group 0 appears whole, with the root (docs/FORMAT.md §3.3).
        if isNew, sharing.received == nil { writer.holdGroupZero() }
        defer { try? writer.endGroupZeroHold() }
        // A vault opened through a grant whose owner withdrew it since: its slots are gone from
        // a storage both write, and nothing of this session goes in (§14.8).
        // (A sync following a withdrawal has moved the state to new slot names: not that.)
        if sharing.received != nil, !isNew, sharing.following == nil, try !storage.entryExists(name(0)) && !storage.entryExists(name(1)) {
            throw SharingError.accessEnded
        }
        // What this commit frees or places depends on the sync base's pins (index 3 reads them late).
        if hasChanges || syncBases.pending != nil { try readPinsIfUnread() }
        try normalizeLayouts()
        try flushDirtyChunks()
        // Housekeeping rides on a commit that writes anyway: a session that changed nothing
        // leaves the storage as it found it.
        if hasChanges { try compactPacks() }
        try packs.writeOpenPack(writer: &writer)
        let changed = hasChanges || writer.hasUnsyncedFiles
        let refillDue = writer.refillsFreedFiles && writer.allocator.hasRefillDue
        guard changed || (final && (committer.committedSinceCoverRefresh || refillDue)) else { return }
        if changed {
            try prepareUpgradeCommit()
            try prepareConversion()
            if let formatTwo = committer.formatTwo {
                dropFormatOneKeys()
                tree.countVersions(device: formatTwo.localDevice)
            }
            try loadForCommit()
            // Index 3's file blocks are derived from the groups owned as the pages are placed,
            // and the root's device entry must list the same (§15.4; releasing after left a block
            // of no owned number, which the next open refused as damaged). So groups go before;
            // after, those the old pages freed, where a block keeps an owned group.
            try writer.dropUnusedNewGroups()
            if !writer.releasesAtRoot { writer.releaseGroups() }
            committer.markChangedRecords(&tree)
            try writeIndexPages { key, tree, arena, format in
                format == .one ? Self.encodeRecord(key, tree, arena) : Self.encodeRecordV2(key, tree, arena)
            }
            if let generations = syncBases.pending { try writeSyncBase(generations) }
            if !writer.releasesAtRoot { writer.releaseGroups(keepingBlocks: committer.indexThree != nil) }
        } else {
            try writer.dropUnusedNewGroups()
        }
        try writer.createUnwrittenFiles()
        try writer.syncData()
        // A lock that writes only the refill's root (nothing saved since the covers' last
        // refresh) leaves the covers alone (R-COV-3).
        let saved = changed || committer.committedSinceCoverRefresh
        let refresh = !isNew && saved && (final || committer.coversAreDue(now: session.clock.now()))
        if refresh {
            try committer.refreshCovers(writer: writer, now: session.clock.now)
            statistics.coverRefreshes += 1
        } else if isNew {
            committer.coversAreNew(now: session.clock.now())
        }
        if changed {
            try lendFollowSlots()
            let releasing = try writeRoot(coversRefreshed: refresh)
            // A follow (FORMAT.md §14.8): until the record's or grant's switch it opens the old
            // root, which reads what the steps after the root write over or remove: after it.
            try finishFollowing()
            try afterRoot(releasing: releasing)
        }
        // At lock, the files the last commit freed are still referenced by the other slot's
        // root, and no later commit of this session will refill them: a second root of the same
        // index takes that slot over, then they are refilled (§9.2 step 6).
        if final && writer.refillsFreedFiles && writer.allocator.hasRefillDue {
            try afterRoot(releasing: try writeRoot(coversRefreshed: true))
        }
    }

    /// Seals every dirty chunk in key order. The keys are sorted once, not once per chunk (a
    /// commit after a 256 MiB write flushes 1,024 chunks). Flushing chunk i > 0 of a packed file
    /// makes its chunk 0 dirty, which comes next, as it would in a fresh sorted list.
    private mutating func flushDirtyChunks() throws {
        var keys = chunks.dirtyKeys
        while !keys.isEmpty {
            for key in keys where chunks.isDirty(key) {
                try flushChunk(key)
                let first = ChunkCache.Key(item: key.item, index: 0)
                if chunks.isDirty(first) { try flushChunk(first) }
            }
            keys = chunks.dirtyKeys
        }
    }

    /// A file's layout follows its size: a pack member below 256 KiB, chunk files from there on.
    private mutating func normalizeLayouts() throws {
        for id in tree.dirtyItems {
            guard let item = tree.items[id], item.isFile else { continue }
            let small = item.record.size < UInt64(Self.payload)
            switch item.record.layout {
            case .packed where !small, .chunked where small:
                try cacheChunk(id, 0)
                chunks.markDirty(ChunkCache.Key(item: id, index: 0))
            default: break
            }
        }
    }

    /// Moves the members of nearly empty packs into the open pack, so that deleted small files
    /// give their space back (`PackStore.sparsePacks` says which).
    private mutating func compactPacks() throws {
        let allocator = writer.allocator
        for number in packs.sparsePacks(own: { allocator.isOwnDevice($0) }) {
            // Moving the members of an earlier pack may have made this one the open pack (the one
            // with the most free tail): members just placed in it are not on disk yet, and reading
            // them from there would move random bytes (found by tools/stress under CPU load).
            guard !packs.isOpen(number) else { continue }
            try faultMembers(of: number)
            let members = packs.members(of: number).compactMap { id in tree.items[id]?.packedMember.map { (id, $0) } }
            // With no other pack to take its first member, compaction waits, as `place` would
            // make it, but without reading the pack first: a session with one pack that lost
            // members read it whole at every commit.
            guard let first = members.first else { continue }
            guard packs.hasRoom(for: Int(first.1.sealedLength), avoiding: number, writer: writer) else { return }
            // A pack that cannot be read (missing, wrong size) stays where it is: its items report
            // the damage when read, and the rest of the vault still commits.
            guard let contents = try? members.map({ id, old in
                try storage.read(try name(number), offset: Int(old.offset), count: Int(old.sealedLength))
            }) else { continue }
            for ((id, old), sealed) in zip(members, contents) {
                // Housekeeping: on a full disk, or with no other pack to take the member, it
                // waits; the commit goes on.
                guard let (newNumber, offset) = try? packs.place(sealed, writer: &writer, avoiding: number) else { return }
                var moved = old
                moved.fileNumber = newNumber
                moved.offset = UInt32(offset)
                releaseMember(id, old)
                tree.update(id) { $0.layout = .packed(moved) }
                packs.addMember(id, moved)
            }
        }
    }

    /// A record's value as a page stores it: the item record with its key from the arena, or
    /// a chunk-map segment.
    private static func encodeRecord(_ key: RecordKey, _ tree: ItemTree, _ arena: SecretArena) -> [UInt8] {
        let item = tree.items[key.itemID]!
        if let segment = key.segmentIndex {
            return ChunkSegment.encode(item.segmentEntries(segment).map { ChunkSegment.Entry(indexInSegment: $0.indexInSegment, ref: $0.ref.sealed) })
        }
        var record = item.record
        if let slot = item.key { record.itemKey = arena.bytes(slot) }
        defer { Sealer.wipe(&record.itemKey) }
        return record.encode()
    }

    /// The commit point, then what follows it: the state in memory is generation g+1's, the
    /// other slot of a first commit is made. Returns the files the root released, which go in
    /// `afterRoot`.
    private mutating func writeRoot(coversRefreshed: Bool) throws -> [UInt64] {
        if writer.releasesAtRoot { writer.releaseGroups() }
        let releasing = writer.releasingFiles
        let upgrading = committer.upgrade != nil
        prepareStagedRoot()
        try committer.writeRoot(releasing: releasing, nextItemID: tree.nextItemID, writer: &writer, arena: session.arena,
                                coversRefreshed: coversRefreshed)
        if upgrading { finishUpgrade() }
        let items = tree.items
        packs.didCommit { items[$0]?.packedMember }
        tree.didCommit()
        statistics.commits += 1
        try committer.writeOtherSlot(writer: &writer)
        try writer.nameJoinRecord()
        statistics.refilledFiles += writer.refillFreedFiles()
        return releasing
    }

    /// After the root (and a follow's switch): the groups it released go, the staged downloads
    /// go to their names (§13.11), and the groups other devices released go. A crash before
    /// leaves them to the root's writing open (its releasing groups and tag 1025).
    private mutating func afterRoot(releasing: [UInt64]) throws {
        try writer.removeReleased(releasing)
        try finishStagedDownloads()
        try removeReleasedElsewhere()
    }
}
