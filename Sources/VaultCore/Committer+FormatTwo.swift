import VaultCrypto
import VaultFormat
import VaultStore

/// What a format-2 root holds besides the index (docs/FORMAT.md §13.4–§13.5): the root key that
/// seals it, this device's entry, the unlock record's file, and extensions kept as found.
struct FormatTwoRoot {
    let rootKey: SecretBytes
    let deviceID: [UInt8]
    let itemPrefix: UInt32
    let deviceName: [UInt8]
    /// The owner's unlock record, and the grants (§14) sharing adds.
    var specialFiles: [IndexRootV2.SpecialFile]
    var extensions: [IndexRootV2.Extension] = []
}

/// Format 2's pages and roots: a fresh random key per page version, recorded only in the root
/// that lists it; the root into slot g mod 2 (the commit point), then its copy into the other
/// slot, so that no older root survives in either (design §E).
extension Committer {
    /// A leaf page (§13.6) under its own new key, kept in the arena until the page is replaced.
    func writePageV2(_ records: [(key: RecordKey, value: [UInt8])], writer: inout FileWriter, arena: SecretArena) throws -> StoredRef {
        var body = IndexPageV2.encode(level: 0, .leaf(records))
        defer { Sealer.wipe(&body) }
        let key = try arena.allocateRandom(using: writer.random)
        do {
            let (_, file) = try Sealer.sealEnvelope(kind: .indexPage, version: StorageFormat.two.envelopeVersion, body: body[...],
                                                    key: .arena(key, arena), seal: .indexPageV2(level: 0), random: writer.random)
            return StoredRef(fileNumber: try writer.store(file), key: key)
        } catch {
            arena.free(key)
            throw error
        }
    }

    /// The commit point of format 2: root g+1 into slot (g+1) mod 2, synced. Its copy for the
    /// other slot is sealed now and written by `writeCopy`, after the bookkeeping of the commit.
    mutating func writeRootV2(_ root: FormatTwoRoot, releasing: [UInt64], nextItemID: UInt64, writer: inout FileWriter,
                              arena: SecretArena, coversRefreshed: Bool) throws {
        let generation = self.generation + 1
        let slot = generation % Format.indexSlotCount
        let allocator = writer.allocator
        var namesKey = writer.secrets.namesKey.copyBytes()
        var pageKeys = pageTable.pages.map { arena.bytes($0.ref!.key!) }
        defer {
            Sealer.wipe(&namesKey)
            for i in pageKeys.indices { Sealer.wipe(&pageKeys[i]) }
        }
        let device = DeviceEntry(deviceID: root.deviceID, namesKey: namesKey, itemPrefix: root.itemPrefix,
                                 nextItemCounter: UInt32(truncatingIfNeeded: nextItemID), nextFileNumber: allocator.nextFileNumber,
                                 coverCount: allocator.coverCount, ownedGroups: allocator.ownedGroups, releasing: releasing,
                                 name: root.deviceName)
        let top = zip(pageTable.pages, pageKeys).map { page, key in
            PageRef(firstKey: page.keys[0], file: FileRef(raw: page.ref!.fileNumber), pageKey: key)
        }
        var body = IndexRootV2(generation: generation, writerDevice: 0, devices: [device], specialFiles: root.specialFiles,
                               topLevel: 0, top: top, extensions: root.extensions).encode()
        defer { Sealer.wipe(&body) }
        guard body.count <= Format.payloadSize else { throw VaultError.tooLarge("the vault's index has too many pages") }
        func sealed(for slot: UInt64) throws -> [UInt8] {
            try Sealer.sealEnvelope(kind: .indexRoot, version: StorageFormat.two.envelopeVersion, body: body[...],
                                    key: .secret(root.rootKey), seal: .indexRootV2(slot: slot), random: writer.random).file
        }
        let original = try sealed(for: slot)
        try writer.writeSlot(slot, original)
        self.generation = generation
        rootChanged = false
        committedSinceCoverRefresh = !coversRefreshed
        // Neither slot will list what this root dropped once its copy is written: refilled then.
        writer.allocator.didCommit(refillFreedNow: true)
        pendingCopy = try sealed(for: 1 - slot)
    }

    /// The copy of the root just committed, into the other slot, not synced: a crash here leaves
    /// that slot torn or one generation behind, which open takes as normal (design §E).
    mutating func writeCopy(writer: inout FileWriter) throws {
        guard let copy = pendingCopy else { return }
        pendingCopy = nil
        let other = 1 - generation % Format.indexSlotCount
        if writer.allocator.needsCreate(other) {
            try writer.createSlot(other, copy)
        } else {
            try writer.storage.write(try writer.name(other), offset: 0, bytes: copy)
        }
    }
}
