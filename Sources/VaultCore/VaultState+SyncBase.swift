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
        tree.items.filter { $0.key == Format.rootItemID || !$0.value.record.links.isEmpty }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Every file the committed state references under a key: pages, chunks, pack members (raw
    /// FileRef and `SHA-256(key)[0..16]`, §13.11).
    func referencedFiles(pages: [StoredRef]? = nil, items: [UInt64: Item]? = nil) -> Set<FileUse> {
        var uses = Set<FileUse>()
        func add(_ file: UInt64, _ slot: SecretArena.Slot?) {
            guard let slot else { return }
            var key = session.arena.bytes(slot)
            defer { Sealer.wipe(&key) }
            uses.insert(FileUse(file: file, keyHash: Array(SHA256.hash(key).prefix(SyncBase.hashSize))))
        }
        for ref in pages ?? committer.pageTable.pages.compactMap(\.ref) { add(ref.fileNumber, ref.key) }
        for item in (items ?? tree.items).values {
            for ref in item.chunks.values { add(ref.fileNumber, ref.key) }
            if let member = item.packedMember { add(member.fileNumber, item.memberKey) }
        }
        return uses
    }

    /// Writes the base of the state being committed (its versions counted, its pages written)
    /// into new pieces, and records them in extension tag 1; the old pieces are freed.
    mutating func writeSyncBase(_ generations: (read: UInt64, published: UInt64)) throws {
        let items = syncedItems.map { id, item in
            let link = item.record.links.first
            return SyncBase.Item(id: id, version: item.record.version, parent: link?.parentID ?? 0,
                                 nameHash: Self.nameHash(link?.name ?? []), digest: Self.syncDigest(id, item, session.arena))
        }
        let pinned = Set(referencedFiles().map(\.file).filter { writer.allocator.isOwnDevice($0) }).sorted()
        writer.allocator.pin(Set(pinned))
        let stream = SyncBase(items: items, pinned: pinned).encode()
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
        let header = SyncBase.Header(localGeneration: committer.generation + 1, readGeneration: generations.read,
                                     publishedGeneration: generations.published, pieces: pieces)
        formatTwo.extensions.removeAll { $0.tag == SyncBase.extensionTag }
        formatTwo.extensions.append(IndexRootV2.Extension(tag: SyncBase.extensionTag, value: header.encode()))
        formatTwo.extensions.sort { $0.tag < $1.tag }
        committer.formatTwo = formatTwo
        pendingSyncBase = nil
    }
}

/// A file a state references, with a digest of the key it is read with (no key).
public struct FileUse: Hashable, Sendable {
    /// The raw FileRef.
    public var file: UInt64
    public var keyHash: [UInt8]
}
