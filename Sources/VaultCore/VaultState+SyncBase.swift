import VaultCrypto
import VaultFormat
import VaultStore

/// The sync base of docs/FORMAT.md §13.11: what this device and the remote last agreed on, per
/// item (version, place, digest of the payload), and the own files the published remote root
/// references. Written as pieces of this device at a sync's commit; carried unchanged by later
/// commits (extension tag 1), so that the next sync knows what changed on either side.
extension VaultState {
    /// 16 bytes of SHA-256 over an item's payload as a page stores it (keys included), without
    /// its place, times of access and change, version, and where its sealed bytes lie (a pack's
    /// compaction moves a member, sealed bytes and key unchanged, on either device): equal
    /// digests, equal payloads.
    static func syncDigest(_ id: UInt64, _ item: Item, _ arena: SecretArena) -> [UInt8] {
        var stripped = item
        stripped.record.links = []
        stripped.record.atime = 0
        stripped.record.ctime = 0
        stripped.record.version = 0
        stripped.record.changedBy = 0
        if case .packed(var member) = stripped.record.layout {
            member.fileNumber = 0
            member.offset = 0
            stripped.record.layout = .packed(member)
        }
        stripped.chunks = stripped.chunks.mapValues { ref in
            var placeless = ref
            placeless.fileNumber = 0
            return placeless
        }
        var bytes = encodeRecordV2(.item(id), item: stripped, arena)
        for segment in item.segmentIndexes.sorted() { bytes += encodeRecordV2(.segment(id, segment), item: stripped, arena) }
        defer { bytes.wipeStorage() }
        return Array(SHA256.hash(bytes).prefix(SyncBase.hashSize))
    }

    static func nameHash(_ name: [UInt8]) -> [UInt8] { Array(SHA256.hash(name).prefix(SyncBase.hashSize)) }

    /// The items a sync compares: named ones (the root folder included), with their first link.
    var syncedItems: [(id: UInt64, item: Item)] {
        tree.allItems.filter { $0.key == Format.rootItemID || !$0.value.record.links.isEmpty }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Every file the committed state references under a key: pages, chunks, pack members (raw
    /// FileRef and `SHA-256(key)[0..16]`, and a member's offset, §13.11), format 1's seals of
    /// upgraded items included (`fileUse(_:of:)`).
    func referencedFiles(pages: [StoredRef]? = nil, items: [UInt64: Item]? = nil) -> Set<FileUse> {
        var uses = Set<FileUse>()
        for ref in pages ?? committer.pageTable.pages.compactMap(\.ref) + committer.pageTable.parentRefs {
            if let use = fileUse(ref.fileNumber, ref.key) { uses.insert(use) }
        }
        for item in (items ?? tree.allItems).values {
            for ref in item.chunks.values { if let use = fileUse(ref, of: item) { uses.insert(use) } }
            if let member = item.packedMember, let use = fileUse(member: member, of: item) { uses.insert(use) }
        }
        return uses
    }

    /// A file read under the key in `slot`.
    func fileUse(_ file: UInt64, _ slot: SecretArena.Slot?, offset: UInt32 = 0) -> FileUse? {
        guard let slot else { return nil }
        var key = session.arena.bytes(slot)
        defer { Sealer.wipe(&key) }
        return FileUse(file: file, keyHash: Self.keyHash(key), offset: offset)
    }

    /// Where chunk `ref` of `item` lies: under its own key, or (scheme 1) format 1's seal.
    func fileUse(_ ref: StoredRef, of item: Item) -> FileUse? {
        ref.key == nil ? formatOneUse(ref.fileNumber, item, nonce: ref.nonce) : fileUse(ref.fileNumber, ref.key)
    }

    /// Where `member` of `item` lies: under its own key, or (layout 3) format 1's seal.
    func fileUse(member: ItemRecord.Member, of item: Item) -> FileUse? {
        member.key.isEmpty ? formatOneUse(member.fileNumber, item, nonce: member.nonce, offset: member.offset)
            : fileUse(member.fileNumber, item.memberKey, offset: member.offset)
    }

    /// A seal of format 1 that an upgraded item keeps (FORMAT.md §13.9) has no key of its own:
    /// the item key ITK and the seal's recorded nonce N open it. Its identity is
    /// `SHA-256(SHA-256(ITK) || N)[0..16]`, which every device computes alike from the records:
    /// the nonce is random for every seal, so two seals never share one (two members of a
    /// format-1 pack differ in it and in their offsets), and no key's digest (over 32 bytes,
    /// not 56) is one. Kept in memory only, like the key digests: nothing of it is stored.
    private func formatOneUse(_ file: UInt64, _ item: Item, nonce: [UInt8], offset: UInt32 = 0) -> FileUse? {
        guard let slot = item.key, nonce.count == Format.sealNonceSize else { return nil }
        var key = session.arena.bytes(slot)
        defer { Sealer.wipe(&key) }
        return FileUse(file: file, keyHash: Array(SHA256.hash(SHA256.hash(key) + nonce).prefix(SyncBase.hashSize)), offset: offset)
    }

    static func keyHash(_ key: [UInt8]) -> [UInt8] { Array(SHA256.hash(key).prefix(SyncBase.hashSize)) }

    /// The base items of the state as it is (after a commit: with its versions counted).
    var currentBaseItems: [SyncBase.Item] {
        syncedItems.map { id, item in
            let link = item.record.links.first
            return SyncBase.Item(id: id, version: item.record.version, parent: link?.parentID ?? 0,
                                 nameHash: Self.nameHash(link?.name ?? []), digest: Self.syncDigest(id, item, session.arena))
        }
    }

    /// This device's files that the state references (what its remote root would).
    var ownReferencedFiles: Set<UInt64> { Set(referencedFiles().map(\.file).filter { writer.allocator.isOwnDevice($0) }) }

    /// A sync's commit, before its remote root goes up: the base it records is the remote's
    /// tree as read (what the remote is known to hold, and the committed state includes), with
    /// the own files of that remote root pinned beside the committed state's. The committed
    /// state becomes the base only once its root is up (`confirmSyncBase`): a sync cut before
    /// that, or a root another device's replaced, leaves a base every later remote root
    /// descends from, so the next merge sees this device's changes as changes.
    /// The own files of the root read stay pinned after that too, until the next sync's commit:
    /// a device that read the same root may still write its root over this one's once it was
    /// read back (rclone has no compare-and-swap); that root comes from the one read and may
    /// reference those files under its keys (SYNC-DESIGN §3.4 step 7).
    mutating func commitSyncBase(_ remote: RemoteVault) throws {
        let read = remote.generation
        let remoteFiles = Set(remote.uses.map(\.file).filter { writer.allocator.isOwnDevice($0) })
        // A first root: no root of this vault can be on the remote but one made from this one.
        syncBases.pending = SyncBasePlan(items: read == 0 ? nil : remote.baseItems, pinned: remoteFiles, read: read, published: read + 1,
                                       localGeneration: nil)
        committer.formatTwo?.rootDue = true
        // A join's record goes into its stand-in (`JoinStandIns`): one that was here when the join
        // began is a file the join replaces (told before the commit writes it, FORMAT.md §13.12).
        if remote.replacesPartialJoin, let standIn = writer.joinStandIns?.record, remote.joinHeld?.contains(standIn) == true {
            remote.joinReplaced.insert(standIn)
        }
        try commit()
        packs.pin(ownReferencedFiles, keeping: remoteFiles)
        syncBases.publishing = SyncBasePlan(items: currentBaseItems, pinned: ownReferencedFiles.union(remoteFiles), read: read + 1,
                                            published: read + 1,
                                      localGeneration: committer.generation)
    }

    /// The remote root of the last sync's commit is up: that commit's state becomes the base
    /// (read = published). Its local generation is the new commit's own when nothing changed
    /// since, else the sync's commit's (older: the next sync sends what changed meanwhile).
    /// The own files only the remote root before referenced may be reused again.
    mutating func confirmSyncBase() throws {
        guard var plan = syncBases.publishing else { return }
        syncBases.publishing = nil
        if committer.generation == plan.localGeneration && !hasChanges { plan.localGeneration = nil }
        syncBases.pending = plan
        committer.formatTwo?.rootDue = true
        try commit()
        writer.allocator.publishedPins(stillUsed: filesInUse)
        packs.publishedPins()
    }

    /// Reads the committed root's sync base for its pins, once, where an open of index 3 did not:
    /// before a commit that writes, a pack's placement, or new file blocks. What was released
    /// meanwhile waited for the commit (`FileAllocator.release`), so a pinned file is not freed.
    mutating func readPinsIfUnread() throws {
        guard syncBases.pinsUnread, let formatTwo = committer.formatTwo else { return }
        let root = try committer.rootV2(formatTwo, generation: committer.generation, releasing: [],
                                        nextItemID: tree.nextItemID, writer: writer, arena: session.arena)
        defer { root.wipeKeys() }
        let pins = Set(try VaultState.readSyncBase(root, storage: storage, secrets: secrets)?.base.pinned ?? [])
        writer.allocator.learnPins(pins)
        packs.pinWhole(pins)
        syncBases.pinsUnread = false
    }

    /// Every own file the committed root needs: what it references, its special files, and the
    /// base's pieces (a pinned number of a remote root may be one of these here by now).
    var filesInUse: Set<UInt64> {
        var used = Set(referencedFiles().map(\.file))
        guard let formatTwo = committer.formatTwo else { return used }
        used.formUnion(formatTwo.specialFiles.map(\.file.raw))
        used.formUnion((try? VaultState.syncBasePieceFiles(formatTwo.extensions)) ?? [])
        return used
    }

    /// After a sync's commit (`commitSyncBase`): whether the remote root it read is that state
    /// already (`remoteHoldsState`: a merge that took only the other side's changes), so that
    /// nothing goes up. Then the pins are those the commit recorded, the own files of that root
    /// and the state's: the ones kept beside them in memory for a root to publish (the root the
    /// sync before read, this device's last root) go, as an open after the commit has them
    /// (SYNC-DESIGN §3.2, "How long"); a mount kept them until its next publish.
    mutating func remoteHoldsCommittedState(_ remote: RemoteVault) throws -> Bool {
        guard try remoteHoldsState(remote) else { return false }
        syncBases.publishing = nil
        writer.allocator.publishedPins(stillUsed: filesInUse)
        packs.publishedPins()
        return true
    }

    /// The remote holds the root of this device's last sync, which never learnt it (cut after
    /// the root went up), and nothing changed here since: the state is that root's, the base.
    /// The pins that sync's commit recorded stay, the own files of the root it read among them,
    /// as `confirmSyncBase` keeps them: a racing root may come from that root (§3.4 step 7)
    /// until a later sync reads this one back.
    mutating func confirmLandedSyncBase(generation: UInt64) throws {
        try readPinsIfUnread()
        try confirmOwnRoot(generation: generation, pinned: syncBases.recordedPins ?? writer.allocator.pinnedNumbers)
    }

    /// A sync with nothing to send read this device's root, known to be up, back from the
    /// remote: the pins kept for the root the sync before read (`commitSyncBase`) go, at one
    /// commit; none when only that root's own files and the state's are pinned (SYNC-DESIGN §3.2).
    mutating func releaseReadRootPins(_ remote: RemoteVault) throws {
        try readPinsIfUnread()
        let remoteFiles = Set(remote.uses.map(\.file).filter { writer.allocator.isOwnDevice($0) })
        let recorded = syncBases.recordedPins ?? writer.allocator.pinnedNumbers
        // An idle mount round lands here at every interval: the scan of every reference (a key
        // hash per chunk) only when something beyond the root read back is pinned at all.
        let beyondRoot = recorded.subtracting(remoteFiles)
        guard !beyondRoot.isEmpty, !beyondRoot.subtracting(ownReferencedFiles).isEmpty else { return }
        packs.pin(ownReferencedFiles)
        try confirmOwnRoot(generation: remote.generation, pinned: remoteFiles)
    }

    /// The state is this device's root of `generation` on the remote: the base, with `pinned`
    /// beside the state's own files.
    private mutating func confirmOwnRoot(generation: UInt64, pinned: Set<UInt64>) throws {
        syncBases.publishing = SyncBasePlan(items: currentBaseItems, pinned: ownReferencedFiles.union(pinned), read: generation,
                                            published: generation, localGeneration: committer.generation)
        try confirmSyncBase()
    }

    /// Writes `plan`'s base into new pieces and records them in extension tag 1; the old pieces
    /// are freed. Pinned: the plan's files and the committed state's own (its pages written).
    mutating func writeSyncBase(_ plan: SyncBasePlan) throws {
        let pinned = ownReferencedFiles.union(plan.pinned)
        writer.allocator.pin(pinned)
        syncBases.recordedPins = pinned
        let stream = SyncBase(items: plan.items ?? currentBaseItems, pinned: pinned.sorted()).encode()
        var pieces: [(file: FileRef, key: [UInt8])] = []
        defer { for piece in pieces { piece.key.wipeStorage() } }
        for (index, body) in SyncBase.pieces(of: stream).enumerated() {
            let key = try SecretBytes.random(count: Format.keySize, using: session.random)
            defer { key.wipe() }
            let (_, file) = try Sealer.sealEnvelope(kind: .syncBase, version: StorageFormat.two.envelopeVersion, body: body,
                                                    key: .secret(key), seal: .syncBase(piece: index), random: session.random)
            pieces.append((FileRef(raw: try writer.store(file)), key.copyBytes()))
        }
        var formatTwo = committer.formatTwo!
        if let old = formatTwo.extensions.first(where: { $0.tag == SyncBase.extensionTag }),
           let header = try? SyncBase.Header.decode(old.value) {
            for piece in header.pieces {
                writer.release(piece.file.raw)
                piece.key.wipeStorage()
            }
        }
        let header = SyncBase.Header(localGeneration: plan.localGeneration ?? committer.generation + 1, readGeneration: plan.read,
                                     publishedGeneration: plan.published, pieces: pieces)
        formatTwo.extensions.removeAll { $0.tag == SyncBase.extensionTag }
        formatTwo.extensions.append(IndexRootV2.Extension(tag: SyncBase.extensionTag, value: header.encode()))
        formatTwo.extensions.sort { $0.tag < $1.tag }
        committer.formatTwo = formatTwo
        syncBases.pending = nil
    }
}

/// A sync base for a commit to record (FORMAT.md §13.11): the items of a state the remote is
/// known to hold (nil: the committed state's), own files to pin beside the committed state's,
/// the remote generations, and the local generation the base goes with (nil: the committing
/// root's own).
struct SyncBasePlan {
    var items: [SyncBase.Item]?
    var pinned: Set<UInt64>
    var read: UInt64
    var published: UInt64
    var localGeneration: UInt64?
}

/// The sync bases in flight: the one the next commit records, and the one a sync's commit
/// records once its remote root is up (the state of that commit), until then only in memory.
struct SyncBasePlans {
    var pending: SyncBasePlan?
    var publishing: SyncBasePlan?
    /// The pins the committed root's sync base lists, once a commit of this session wrote one
    /// (nil: the allocator's, as read at open). Index 3's file blocks hold these (§15.4); the
    /// allocator may pin more while a sync's root is on its way up.
    var recordedPins: Set<UInt64>?
    /// An open of index 3 left the base's pieces unread (§15.4): the allocator and the packs
    /// learn its pins before anything depends on them (`VaultState.readPinsIfUnread`).
    var pinsUnread = false
}

/// A file a state references, with a digest of the key it is read with (no key) and, for a
/// pack member, where in the pack it lies: compaction moves a member under the same key, even
/// within one pack file, and a copy of that file from before the move lacks it there (seen in
/// `tools/sync-crash-trials` as packed files that read EIO after a merge, SEED=21220).
public struct FileUse: Hashable, Sendable {
    /// The raw FileRef.
    public var file: UInt64
    public var keyHash: [UInt8]
    /// A pack member's offset; 0 for a page or a chunk (a whole file).
    public var offset: UInt32 = 0
}
