import VaultCrypto
import VaultFormat
import VaultStore

/// The upgrade of a format-1 vault to format 2 (docs/FORMAT.md §13.9, design §G). At open the
/// state becomes format 2 in memory (new VK, RL = LOC, NKd = NK, item prefix 0), so that what
/// the session writes is sealed as format 2; the storage stays format 1 until the commit point
/// of the first commit that writes, which places the owner's unlock record, writes every page
/// and item record again, commits the format-2 root, and refills every free file.
extension VaultState {
    /// Makes an opened format-1 vault format 2 in memory. `found`: an upgrade's unlock record
    /// at the pattern's name beside format-1 roots (a cut upgrade): its VK and file are kept and
    /// the next commit resumes. A record whose file is not one of the root's free data files was
    /// left behind by an upgrade that a release without the upgrade then overwrote: a writable
    /// open removes it and starts over; a read-only one ignores it.
    mutating func startUpgrade(resuming found: (name: String, record: UnlockRecord)?) throws {
        // Item IDs keep their numbers under item prefix 0: the counter is 32 bits.
        guard tree.nextItemID <= UInt64(UInt32.max) else { return }
        var resumed: FormatOneUpgrade?
        if let found {
            let file = found.record.ownFile
            if file.device == 0 && writer.allocator.reserve(file.number) {
                resumed = FormatOneUpgrade(recordNumber: file.number, recordName: found.name, sealedRecord: nil)
            } else if session.readOnly {
                return
            } else {
                try storage.remove(found.name)
                try storage.syncFolder()
            }
        } else if session.readOnly {
            return
        }
        let vaultKey = try resumed == nil ? SecretBytes.random(count: Format.keySize, using: session.random)
            : SecretBytes(copying: found!.record.vaultKey)
        var upgrade: FormatOneUpgrade
        if let resumed {
            upgrade = resumed
        } else {
            let number = try writer.allocateUsable()
            let sealed = try FormatTwoVault.sealUnlock(vaultKey: vaultKey, rootLocator: session.patternSecrets.locator,
                                                       file: FileRef(device: 0, number: number), patternSecrets: session.patternSecrets,
                                                       random: session.random)
            upgrade = FormatOneUpgrade(recordNumber: number, recordName: try FormatTwoKeys.unlockName(locator: session.patternSecrets.locator),
                                       sealedRecord: sealed)
        }
        let rootKey = try FormatTwoKeys.rootKey(vaultKey: vaultKey)
        let upgraded = VaultSecrets(rootLocator: try Self.duplicate(session.patternSecrets.locator), rootKey: rootKey,
                                    namesKey: try Self.duplicate(session.patternSecrets.namesKey))
        let special = IndexRootV2.SpecialFile(file: FileRef(device: 0, number: upgrade.recordNumber), role: .ownerUnlock,
                                              name: try FormatTwoKeys.unlockNameBytes(locator: session.patternSecrets.locator))
        let root = FormatTwoRoot(rootKey: rootKey, deviceID: try session.random.bytes(DeviceEntry.idSize), itemPrefix: 0, deviceName: [],
                                 specialFiles: [special])
        var next = try Committer(vaultKey: vaultKey, generation: committer.generation, pageTable: committer.pageTable, formatTwo: root)
        next.missingSlot = committer.missingSlot
        next.upgrade = upgrade
        // Format 1's vault and page keys open nothing from here on: every page was read at open.
        committer.wipe()
        committer = next
        secrets = upgraded
        writer.secrets = upgraded
    }

    /// The upgrade's steps before the pages (§13.9 step 2): every record is written again in
    /// format 2, and the unlock record goes to its name unless it is there already; either way
    /// the folder is synced before the root.
    mutating func prepareUpgradeCommit() throws {
        guard var upgrade = committer.upgrade else { return }
        tree.markAllDirty()
        committer.rewriteAllPages()
        try writer.placeUnlockRecord(upgrade.sealedRecord, number: upgrade.recordNumber, name: upgrade.recordName)
        upgrade.sealedRecord = nil
        committer.upgrade = upgrade
    }

    /// After the upgrade's commit point (§13.9 steps 4–5): the vault is format 2 on disk, and
    /// every free file is refilled with the files this commit freed.
    mutating func finishUpgrade() {
        committer.upgrade = nil
        writer.allocator.refillEveryFreeFile()
    }

    /// An upgraded item keeps its format-1 item key only while a scheme-1 chunk or a layout-3
    /// member of it is in use (§13.8): the commit after the last one went drops it.
    mutating func dropFormatOneKeys() {
        for id in tree.dirtyItems {
            guard let item = tree.items[id], item.key != nil else { continue }
            // In memory a format-2 member's record holds zeros for its key; a format-1 one none.
            let formatOneMember = item.packedMember.map { $0.key.isEmpty } ?? false
            guard !formatOneMember, !item.chunks.values.contains(where: { $0.key == nil }) else { continue }
            if let slot = tree.dropItemKey(id) { session.arena.free(slot) }
        }
    }

    /// Names of the files numbered in the root but named otherwise (the owner's unlock record):
    /// once it is at its name (an upgrade places it at its first commit).
    var specialFileNames: [UInt64: String] {
        guard committer.upgrade?.recordIsPlaced ?? true else { return [:] }
        var names: [UInt64: String] = [:]
        for file in committer.formatTwo?.specialFiles ?? [] { names[file.file.raw] = FileName.encode(file.name) }
        return names
    }

    /// Whether RL is still LOC and NKd still NK (a format-1 vault, or one upgraded from it).
    var namesArePatternDerived: (rootLocator: Bool, namesKey: Bool) {
        func same(_ a: SecretBytes, _ b: SecretBytes) -> Bool {
            var x = a.copyBytes(), y = b.copyBytes()
            defer {
                Sealer.wipe(&x)
                Sealer.wipe(&y)
            }
            return ConstantTime.equals(x, y)
        }
        return (same(secrets.locator, session.patternSecrets.locator), same(secrets.namesKey, session.patternSecrets.namesKey))
    }

    private static func duplicate(_ secret: SecretBytes) throws -> SecretBytes {
        var bytes = secret.copyBytes()
        defer { Sealer.wipe(&bytes) }
        return try SecretBytes(copying: bytes)
    }
}
