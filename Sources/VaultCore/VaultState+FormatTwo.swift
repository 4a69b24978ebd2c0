import VaultCrypto
import VaultFormat
import VaultStore

/// Format 2's seals of content (docs/FORMAT.md §13.7–§13.8): every chunk and every pack member
/// under a fresh random key, recorded only in its chunk-map entry or item record, so that a
/// version no record references any more cannot be opened with anything the vault keeps.
extension VaultState {
    var format: StorageFormat { committer.format }

    /// Chunk `index` sealed under a new key into a free file (copy-on-write).
    mutating func storeChunkV2(_ id: UInt64, _ index: Int, _ data: [UInt8]) throws {
        let key = try session.arena.allocateRandom(using: session.random)
        do {
            let (_, file) = try Sealer.sealEnvelope(kind: .chunk, version: StorageFormat.two.envelopeVersion, body: data[...],
                                                    key: .arena(key, session.arena), seal: .chunkV2(index: index), random: session.random)
            statistics.chunkEncrypts += 1
            let number = try writer.store(file, data: true)
            if let old = tree.setChunk(id, index, StoredRef(fileNumber: number, key: key)) { release(old) }
        } catch {
            session.arena.free(key)
            throw error
        }
    }

    /// A small file's content as a pack member `N || ciphertext || tag` under a new key.
    mutating func storePackedV2(_ id: UInt64, _ data: [UInt8]) throws {
        let key = try session.arena.allocateRandom(using: session.random)
        let placed: (fileNumber: UInt64, offset: Int), length: Int
        do {
            let (nonce, sealed) = try Sealer.seal(data[...], key: .arena(key, session.arena), seal: .memberV2, random: session.random)
            statistics.memberEncrypts += 1
            length = nonce.count + sealed.count
            placed = try packs.place(nonce + sealed, writer: &writer)
        } catch {
            session.arena.free(key)
            throw error
        }
        // The record holds zeros where the key goes; the key itself is in the arena (`memberKey`).
        let member = ItemRecord.Member(file: FileRef(raw: placed.fileNumber), offset: UInt32(placed.offset),
                                       sealedLength: UInt32(length), key: ItemRecord.Member.keyPlaceholder)
        if let old = tree.setMemberKey(id, key) { session.arena.free(old) }
        tree.update(id) { $0.layout = .packed(member) }
        packs.addMember(id, member)
    }

    /// Opens a pack member: format 2's with its own key (its nonce leads the sealed bytes),
    /// format 1's (and layout 3 of an upgraded item) with the item key and the recorded nonce.
    func openMember(_ id: UInt64, _ item: Item, _ member: ItemRecord.Member, _ sealed: [UInt8]) throws -> [UInt8] {
        let seal = try memberSeal(id, item, member, sealed)
        return try Sealer.open(seal.ciphertext, nonce: seal.nonce, key: seal.key, seal: seal.context)
    }

    /// The same, decrypted straight into a block of `pool` sized for the plaintext alone: sized
    /// from the sealed bytes, nonce and tag took a 32 KiB file past a power of two, to 64 KiB.
    func openMember(_ id: UInt64, _ item: Item, _ member: ItemRecord.Member, _ sealed: [UInt8],
                    in pool: PlaintextPool) throws -> PlaintextBuffer {
        let seal = try memberSeal(id, item, member, sealed)
        let body = PlaintextBuffer(pool: pool, capacity: min(max(seal.ciphertext.count - Format.tagSize, 0), Self.payload))
        try Sealer.open(seal.ciphertext, nonce: seal.nonce, key: seal.key, seal: seal.context, into: body)
        return body
    }

    private func memberSeal(_ id: UInt64, _ item: Item, _ member: ItemRecord.Member, _ sealed: [UInt8])
        throws -> (ciphertext: ArraySlice<UInt8>, nonce: [UInt8], key: Sealer.Key, context: SealContext) {
        if member.key.isEmpty {
            guard let slot = item.key else { throw CryptoError.authenticationFailed }
            return (sealed[...], member.nonce, .arena(slot, session.arena), .member(item: id))
        }
        guard let slot = item.memberKey, sealed.count > Format.sealNonceSize else { throw CryptoError.authenticationFailed }
        return (sealed[Format.sealNonceSize...], Array(sealed[..<Format.sealNonceSize]), .arena(slot, session.arena), .memberV2)
    }

    /// A record's value as a format-2 page stores it (§13.7, §13.8): keys from the arena.
    static func encodeRecordV2(_ key: RecordKey, _ tree: ItemTree, _ arena: SecretArena) -> [UInt8] {
        encodeRecordV2(key, item: tree.items[key.itemID]!, arena)
    }

    /// The same for an item given apart from a tree (sync's digests).
    static func encodeRecordV2(_ key: RecordKey, item: Item, _ arena: SecretArena) -> [UInt8] {
        if let segment = key.segmentIndex {
            // Shared with the entries: zeroed where every copy reads them.
            var keys: [[UInt8]] = []
            defer { for key in keys { key.wipeStorage() } }
            let entries = item.segmentEntries(segment).map { index, ref in
                let seal: ChunkSegmentV2.Seal
                if let slot = ref.key {
                    keys.append(arena.bytes(slot))
                    seal = .key(keys[keys.count - 1])
                } else {
                    seal = .formatOne(nonce: ref.nonce)
                }
                return ChunkSegmentV2.Entry(indexInSegment: index, file: FileRef(raw: ref.fileNumber), seal: seal)
            }
            return ChunkSegmentV2.encode(entries)
        }
        var record = item.record
        record.recordVersion = 2
        let itemKey = item.key.map(arena.bytes) ?? [], memberKey = item.memberKey.map(arena.bytes) ?? []
        defer {
            itemKey.wipeStorage()
            memberKey.wipeStorage()
        }
        record.itemKey = itemKey
        if case .packed(var member) = record.layout, !memberKey.isEmpty {
            member.key = memberKey
            record.layout = .packed(member)
        }
        return record.encode()
    }
}
