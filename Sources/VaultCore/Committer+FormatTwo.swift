import VaultCrypto
import VaultFormat
import VaultStore

/// What a format-2 root holds besides the index (docs/FORMAT.md §13.4–§13.5): the root key that
/// seals it, this device's entry, the unlock record's file, the other devices, and extensions
/// kept as found (the sync base, tag 1, among them).
struct FormatTwoRoot {
    let rootKey: SecretBytes
    let deviceID: [UInt8]
    let itemPrefix: UInt32
    let deviceName: [UInt8]
    /// The owner's unlock record, and the grants (§14) sharing adds.
    var specialFiles: [IndexRootV2.SpecialFile]
    var extensions: [IndexRootV2.Extension] = []
    /// This device's index in the table: its entry is written from the allocator at each commit.
    var localDevice: UInt16 = 0
    /// The table as read (names keys emptied: they are in `VaultSecrets`); empty for a new vault.
    var devices: [DeviceEntry] = []
    /// A root must be written though no page changed (sync adopted another root's pages).
    var rootDue = false
}

/// Format 2's pages and roots: a fresh random key per page version, recorded only in the root
/// that lists it; the root into slot g mod 2 (the commit point), then its copy into the other
/// slot, so that no older root survives in either (design §E).
extension Committer {
    /// A page (§13.6) under its own new key, kept in the arena until the page is replaced.
    func writePageV2(level: UInt8, _ node: IndexPageV2.Node, writer: inout FileWriter, arena: SecretArena) throws -> StoredRef {
        var body = IndexPageV2.encode(level: level, node)
        defer { Sealer.wipe(&body) }
        let key = try arena.allocateRandom(using: writer.random)
        do {
            let (_, file) = try Sealer.sealEnvelope(kind: .indexPage, version: indexEnvelopeVersion, body: body[...],
                                                    key: .arena(key, arena), seal: .indexPageV2(level: level), random: writer.random)
            return StoredRef(fileNumber: try writer.store(file), key: key)
        } catch {
            arena.free(key)
            throw error
        }
    }

    /// The root a commit of this state writes (`generation`), or the remote copy of it (no
    /// releasing, no sync base: docs/FORMAT.md §13.11). It holds names and page keys: the caller
    /// wipes them (`wipeKeys`).
    func rootV2(_ root: FormatTwoRoot, generation: UInt64, releasing: [UInt64], nextItemID: UInt64, writer: FileWriter,
                arena: SecretArena, forRemote: Bool = false) throws -> IndexRootV2 {
        let allocator = writer.allocator
        let local = DeviceEntry(deviceID: root.deviceID, namesKey: [], itemPrefix: root.itemPrefix,
                                nextItemCounter: UInt32(truncatingIfNeeded: nextItemID), nextFileNumber: allocator.entryNextFileNumber,
                                coverCount: allocator.coverCount, ownedGroups: allocator.entryGroups,
                                releasing: forRemote ? [] : releasing.map { $0 - allocator.base }, name: root.deviceName)
        var devices = root.devices.isEmpty ? [local] : root.devices
        devices[Int(root.localDevice)] = local
        for index in devices.indices {
            guard let key = writer.secrets.namesKey(ofDevice: UInt16(index)) else { throw VaultError.damagedIndex("device \(index) has no names key") }
            devices[index].namesKey = key.copyBytes()
        }
        let (level, refs) = pageTable.top
        let top = refs.map { PageRef(firstKey: $0.firstKey, file: FileRef(raw: $0.ref.fileNumber), pageKey: arena.bytes($0.ref.key!)) }
        // The sync base, a former pattern's remote record name, slots to retire, a names move,
        // the remote names it left and staged downloads are this device's own (§13.11, §13.12, §14.8).
        let ownTags: Set<UInt16> = [SyncBase.extensionTag, IndexRootV2.formerRemoteUnlockTag, IndexRootV2.retiringSlotsTag,
                                    NamesMove.extensionTag, FormerRemoteNames.extensionTag, StagedDownloads.extensionTag]
        var extensions = forRemote ? root.extensions.filter { !ownTags.contains($0.tag) } : root.extensions
        if let three = indexThree {
            // EHK in tag 5 (§15.3), in key order with the others; wiped with the root's keys.
            extensions.append(IndexRootV2.Extension(tag: IndexRootV3.entryHashKeyTag, value: three.entryHashKey.copyBytes()))
            extensions.sort { $0.tag < $1.tag }
        }
        return IndexRootV2(generation: generation, writerDevice: root.localDevice, devices: devices, specialFiles: root.specialFiles,
                           topLevel: level, top: top, extensions: extensions)
    }

    /// A root sealed for slot `slot` of a storage (RK, docs/FORMAT.md §13.5); in an envelope of
    /// version 3 when it holds EHK (index version 3, §15.1), so that a withdrawal's roots keep it.
    static func sealRootV2(_ root: IndexRootV2, slot: UInt64, rootKey: SecretBytes, random: any RandomSource) throws -> [UInt8] {
        var body = root.encode()
        defer { Sealer.wipe(&body) }
        guard body.count <= Format.payloadSize else { throw VaultError.tooLarge("the vault's index has too many pages") }
        let three = root.extensions.contains { $0.tag == IndexRootV3.entryHashKeyTag }
        return try Sealer.sealEnvelope(kind: .indexRoot, version: three ? IndexRootV3.envelopeVersion : StorageFormat.two.envelopeVersion, body: body[...],
                                       key: .secret(rootKey), seal: .indexRootV2(slot: slot), random: random).file
    }

    /// The commit point of format 2: root g+1 into slot (g+1) mod 2, synced. Its copy for the
    /// other slot is sealed now and written by `writeCopy`, after the bookkeeping of the commit
    /// (a new vault's first commit: with its group 0, at the commit point).
    mutating func writeRootV2(_ root: FormatTwoRoot, releasing: [UInt64], nextItemID: UInt64, writer: inout FileWriter,
                              arena: SecretArena, coversRefreshed: Bool) throws {
        let generation = self.generation + 1
        let slot = generation % Format.indexSlotCount
        let body = try rootV2(root, generation: generation, releasing: releasing, nextItemID: nextItemID, writer: writer, arena: arena)
        defer { body.wipeKeys() }
        let original = try Self.sealRootV2(body, slot: slot, rootKey: root.rootKey, random: writer.random)
        // Sealed before the root is written (no draw comes between): a new vault's group 0 is
        // made with both slots, the copy in the other (FileWriter.writeSlot).
        let copy = try Self.sealRootV2(body, slot: 1 - slot, rootKey: root.rootKey, random: writer.random)
        let copyWritten = try writer.writeSlot(slot, original, copy: copy)
        self.generation = generation
        formatTwo?.rootDue = false
        committedSinceCoverRefresh = !coversRefreshed
        // Neither slot will list what this root dropped once its copy is written: refilled then.
        // Not so while old slots are retiring (a follow, FORMAT.md §14.8): until the record's
        // switch the record opens the old root there, which needs what this root dropped.
        let oldRootOpens = root.extensions.contains { $0.tag == IndexRootV2.retiringSlotsTag }
        writer.allocator.didCommit(refillFreedNow: !oldRootOpens)
        pendingCopy = copyWritten ? nil : copy
    }

    /// The copy of the root just committed, into the other slot, not synced: a crash here leaves
    /// that slot torn or one generation behind, which open takes as normal (design §E).
    mutating func writeCopy(writer: inout FileWriter) throws {
        guard let copy = pendingCopy else { return }
        pendingCopy = nil
        let other = 1 - generation % Format.indexSlotCount
        let name = try writer.name(other)
        if try writer.writeThroughStandIn(other, copy) { return }
        if try writer.allocator.needsCreate(other) || !writer.storage.entryExists(name) {
            try writer.createSlot(other, copy)
        } else {
            try writer.storage.write(name, offset: 0, bytes: copy)
        }
    }
}

extension IndexRootV2 {
    /// Zeroes the names and page keys a decoded or built root holds, where every copy reads them.
    func wipeKeys() {
        for device in devices { device.namesKey.wipeStorage() }
        for ref in top { ref.pageKey.wipeStorage() }
        for field in extensions where field.tag == IndexRootV3.entryHashKeyTag { field.value.wipeStorage() }
    }
}
