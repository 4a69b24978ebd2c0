import VaultCrypto
import VaultFormat
import VaultStore

/// The pattern change of a vault upgraded from format 1 (docs/FORMAT.md §13.12, design §G): its
/// RL is the old pattern's LOC and device 0's NKd the old pattern's NK, so the change also moves
/// the slots and every file of device 0 to names of a random RL' and NKd', by renames. The root
/// that commits the change records the move (extension tag 3); until a root without it is
/// committed, each file is found at its old name or its new one.
extension VaultState {
    /// Whether the vault's names still come from the pattern that opened it (an upgraded vault):
    /// its RL, or device 0's NKd (a withdrawal gave it a random RL and kept NKd, §14.8).
    var namesMoveWithChange: Bool {
        let derived = namesArePatternDerived
        return derived.rootLocator || derived.namesKey
    }

    /// Refused: a vault with a grant whose recipient the owner's record does not list (step 5a
    /// seals every grant again to RL'), and one whose withdrawal is not synced yet: the remote
    /// is at other keys still (tag 1027), which the sync of a move does not know.
    func checkNamesCanMove(_ root: FormatTwoRoot) throws {
        let grants = root.specialFiles.filter(\.isGrantFile)
        if !grants.isEmpty {
            guard let identity = sharing.identity else { throw PatternChangeError.grantOfUnknownRecipient }
            let known = try Set(VaultRotation.recipients(sharing.ownerOptional).map {
                try GrantSeal.nameBytes(sharing: identity, with: $0, location: Label.localLocation)
            })
            guard grants.allSatisfy({ known.contains($0.name) }) else { throw PatternChangeError.grantOfUnknownRecipient }
        }
        guard rotatedFrom == nil else { throw PatternChangeError.withdrawalNotSynced }
    }

    /// Step 5a: every grant the root lists sealed again (a fresh salt and ephemeral key) with
    /// VK and the new RL', an ended grant as an ended grant, by the storage's atomic replace.
    /// Done whenever the move runs: a grant cannot be read back by its sharer to see if it is.
    private func resealGrants(rootLocator: SecretBytes) throws {
        guard let root = committer.formatTwo, root.specialFiles.contains(where: \.isGrantFile) else { return }
        guard let identity = sharing.identity else { throw PatternChangeError.grantOfUnknownRecipient }
        let owner = UnlockRecord(vaultKey: committer.vaultKey.copyBytes(), rootLocator: rootLocator.copyBytes(),
                                 ownFile: FileRef(raw: 0), identityKey: identity.rawRepresentation.copyBytes(), optional: sharing.ownerOptional)
        defer {
            owner.vaultKey.wipeStorage()
            owner.rootLocator.wipeStorage()
            owner.identityKey.wipeStorage()
        }
        try VaultRotation.reissueGrants(root.specialFiles, owner: owner, storage: storage, random: session.random)
        try storage.syncFolder()
    }

    /// Tag 4 of the committed root: where the remote holds the vault until the next sync moves
    /// it after a synced vault's move (FORMAT.md §13.12, "with sync").
    var formerRemoteNames: FormerRemoteNames? {
        try? committer.formatTwo?.extensions.first { $0.tag == FormerRemoteNames.extensionTag }.map { try FormerRemoteNames.decode($0.value) }
    }

    /// A move of the names made here that the remote has not followed yet (tag 4).
    var namesMoveToSync: Bool {
        committer.formatTwo?.extensions.contains { $0.tag == FormerRemoteNames.extensionTag } ?? false
    }

    /// The remote names the old pattern gave that a synced move leaves on the remote, where
    /// `listed` holds them: the two root slots of tag 4's RL, and device 0's numbers below its
    /// nextFileNumber named from tag 4's NKd. Nil when no move is to be synced.
    func formerRemoteFiles(listed: Set<String>) throws -> [String]? {
        guard let former = formerRemoteNames, let formatTwo = committer.formatTwo, formatTwo.localDevice == 0 else { return nil }
        let locator = try SecretBytes(copying: former.rootLocator), namesKey = try SecretBytes(copying: former.namesKey)
        defer {
            locator.wipe()
            namesKey.wipe()
            former.rootLocator.wipeStorage()
            former.namesKey.wipeStorage()
        }
        var names = try (0..<UInt8(Format.indexSlotCount)).map {
            try FormatTwoKeys.slotName(rootLocator: locator, slot: $0, location: Label.remoteLocation)
        }
        for number in UInt64(Format.indexSlotCount)..<writer.allocator.entryNextFileNumber {
            names.append(try VaultSecrets.deviceFileName(number, namesKey: namesKey))
        }
        return names.filter(listed.contains)
    }

    /// Steps 1–2's part of the move: two more free numbers for the new slots, RL' and NKd'.
    mutating func startNamesMove() throws -> NamesMove {
        let slotFiles = [try writer.allocateUsable(), try writer.allocateUsable()]
        return NamesMove(formerRootLocator: secrets.locator.copyBytes(), rootLocator: try session.random.bytes(Format.keySize),
                         namesKey: try session.random.bytes(Format.keySize), slotFiles: slotFiles.map { FileRef(raw: $0) })
    }

    /// At open, a root that records a move: each file of device 0 is read where it is, at its new
    /// name where only that exists (before the pages are read), and so are the slots and the
    /// files that become the new slots (a check finds every file the root owns).
    static func findMovedNames(_ root: IndexRootV2, _ move: NamesMove, secrets: VaultSecrets, storage: any StorageFolder) throws {
        let newKey = try SecretBytes(copying: move.namesKey), newLocator = try SecretBytes(copying: move.rootLocator)
        let formerLocator = try SecretBytes(copying: move.formerRootLocator)
        defer {
            newKey.wipe()
            newLocator.wipe()
            formerLocator.wipe()
        }
        func pinIfMoved(_ number: UInt64, from old: String, to new: String) throws {
            if try !storage.entryExists(old), try storage.entryExists(new) { secrets.pinName(number, new) }
        }
        let special = root.specialFiles.map(\.file.raw), retired = root.specialFiles.filter { $0.role == .retiredOwner }.map(\.file.raw)
        for number in movedNumbers(root.devices[0].ownedGroups, except: Set(special), move) + retired {
            try pinIfMoved(number, from: try VaultSecrets.deviceFileName(number, namesKey: secrets.namesKey),
                           to: try VaultSecrets.deviceFileName(number, namesKey: newKey))
        }
        for (index, file) in move.slotFiles.enumerated() {
            try pinIfMoved(file.raw, from: try VaultSecrets.deviceFileName(file.raw, namesKey: secrets.namesKey),
                           to: try FormatTwoKeys.slotName(rootLocator: newLocator, slot: UInt8(index)))
            let slot = UInt64(index), own = try secrets.fileName(slot)
            for other in [try FormatTwoKeys.slotName(rootLocator: formerLocator, slot: UInt8(index)),
                          try FormatTwoKeys.slotName(rootLocator: newLocator, slot: UInt8(index))] where other != own {
                try pinIfMoved(slot, from: own, to: other)
            }
        }
    }

    /// Steps 3–7 of the move, each only where its effect is not there yet; then the state names
    /// its files from RL' and NKd', for step 8's root.
    mutating func moveNames(_ move: NamesMove, owner: IndexRootV2.SpecialFile, formers: [IndexRootV2.SpecialFile]) throws {
        let newKey = try SecretBytes(copying: move.namesKey), newLocator = try SecretBytes(copying: move.rootLocator)
        let formerLocator = try SecretBytes(copying: move.formerRootLocator)
        defer { formerLocator.wipe() }
        let oldKey = secrets.namesKey
        func old(_ number: UInt64) throws -> String { try VaultSecrets.deviceFileName(number, namesKey: oldKey) }
        func new(_ number: UInt64) throws -> String { try VaultSecrets.deviceFileName(number, namesKey: newKey) }
        func slot(_ locator: SecretBytes, _ slot: Int) throws -> String { try FormatTwoKeys.slotName(rootLocator: locator, slot: UInt8(slot)) }
        do {
            // 3: the root, as both old slots hold it, into the files that become the new slots.
            for (index, file) in move.slotFiles.enumerated() {
                guard try !storage.entryExists(slot(newLocator, index)) else { continue }
                guard let bytes = try storage.read(slot(formerLocator, index)) else {
                    throw VaultError.damagedIndex("index slot \(index) is missing in the middle of a pattern change")
                }
                try storage.write(try old(file.raw), offset: 0, bytes: bytes)
                try storage.sync([try old(file.raw)])
            }
            // 4: every other file of device 0.
            let special = Set((committer.formatTwo?.specialFiles ?? []).map(\.file.raw))
            for number in Self.movedNumbers(writer.allocator.ownedGroups, except: special, move) {
                try completeRename(try old(number), to: try new(number))
            }
            try storage.syncFolder()
            // 5, 6: the new slots, then the new pattern's record.
            for (index, file) in move.slotFiles.enumerated() { try completeRename(try old(file.raw), to: try slot(newLocator, index)) }
            try storage.syncFolder()
            // 5a: the grants name RL' (VK stays), before the new record can open the vault.
            try resealGrants(rootLocator: newLocator)
            try completeRename(try old(owner.file.raw), to: FileName.encode(owner.name))
            try storage.syncFolder()
            // 7: the old slots, then the old record, become free files of random bytes.
            var freed: [(number: UInt64, name: String)] = []
            for (index, file) in move.slotFiles.enumerated() {
                try completeRename(try slot(formerLocator, index), to: try new(file.raw))
                freed.append((file.raw, try new(file.raw)))
            }
            for former in formers {
                try completeRename(FileName.encode(former.name), to: try new(former.file.raw))
                freed.append((former.file.raw, try new(former.file.raw)))
            }
            try storage.syncFolder()
            try overwriteWithRandom(freed.map(\.name))
            for file in freed { writer.release(file.number) }
        } catch {
            newKey.wipe()
            newLocator.wipe()
            throw error
        }
        // Step 8's root goes to the new slots and names device 0's files from NKd'. RK stays.
        let moved = VaultSecrets(rootLocator: newLocator, rootKey: secrets.indexKey, namesKey: newKey)
        // A synced vault's other devices keep their names (§13.12, "with sync").
        for index in (committer.formatTwo?.devices ?? []).indices where index != 0 {
            guard var bytes = secrets.namesKey(ofDevice: UInt16(index))?.copyBytes() else { continue }
            defer { Sealer.wipe(&bytes) }
            moved.addDevice(UInt16(index), namesKey: try SecretBytes(copying: bytes))
        }
        secrets.locator.wipe()
        oldKey.wipe()
        secrets = moved
        writer.secrets = moved
    }

    /// `random(F)` over each file, synced; one that is missing (an open of the old pattern
    /// removed its record, §13.9) is made, so that the count of files comes back.
    private mutating func overwriteWithRandom(_ names: [String]) throws {
        var made = false
        for name in names {
            if try storage.entryExists(name) {
                try storage.write(name, offset: 0, bytes: try session.random.bytes(Format.fileSize))
            } else {
                try storage.create(name, contents: try session.random.bytes(Format.fileSize), durable: true)
                made = true
            }
        }
        try storage.sync(names)
        if made { try storage.syncFolder() }
    }

    /// Device 0's numbers that the move renames: its owned groups but the slots, the new slots'
    /// files and the special files (which have names of their own).
    static func movedNumbers(_ groups: [GroupRange], except special: Set<UInt64>, _ move: NamesMove) -> [UInt64] {
        let skipped = special.union(move.slotFiles.map(\.raw))
        return groups.flatMap { range in
            (range.first * FileAllocator.group..<range.end * FileAllocator.group).filter { $0 >= Format.indexSlotCount && !skipped.contains($0) }
        }
    }
}

extension NamesMove {
    /// Zeroes the keys where every copy reads them.
    func wipeKeys() {
        formerRootLocator.wipeStorage()
        rootLocator.wipeStorage()
        namesKey.wipeStorage()
    }
}
