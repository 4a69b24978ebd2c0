import VaultCrypto
import VaultFormat
import VaultStore

/// A pattern change (docs/FORMAT.md §13.12, R-KEY-6): the same vault key and root under a new
/// owner record, the old one turned into a cover. The root is the arbiter: until it lists the
/// new record only the old pattern opens the vault; from then on the new one does, and the old
/// record, listed with role 3 until it is random bytes at a device name, opens it at most until
/// the change is finished, which any writing open does.
extension VaultState {
    /// Steps 1–5 of §13.12. `progress` is told each step done (1…3). The caller checked that
    /// the new pattern's names hold nothing; checked again here, since nothing may be hidden.
    mutating func changePattern(to newPattern: VaultSecrets, progress: (Int) -> Void) throws {
        guard !session.readOnly else { throw VaultError.readOnly }
        guard var root = committer.formatTwo, committer.upgrade == nil else { throw PatternChangeError.formatOne }
        guard !isNew else { throw PatternChangeError.noVault }
        guard !notices.openedThroughFormerPattern else { throw PatternChangeError.formerPattern }
        // The owner record is device 0's file; another device's change is not built.
        guard root.localDevice == 0 else { throw PatternChangeError.notFirstDevice }
        let movesNames = namesMoveWithChange
        if movesNames { try checkNamesCanMove(root) }
        guard try FormatTwoVault.use(of: newPattern, in: storage) == .none else { throw PatternChangeError.newPatternInUse }
        guard let owner = root.specialFiles.first(where: { $0.role == .ownerUnlock }),
              !root.specialFiles.contains(where: { $0.role == .retiredOwner }),
              let current = try FormatTwoVault.readUnlock(storage: storage, patternSecrets: session.patternSecrets),
              current.record.ownFile == owner.file else {
            throw VaultError.damagedIndex("the vault's unlock record is not the one its root lists")
        }
        // The record as found keeps the identity key and optional tags; only its file changes, and
        // for a vault upgraded from format 1 its RL (the move of its names, design §G).
        var record = current.record
        let formerLocator = record.rootLocator
        defer {
            // The copy shares its buffers with the record as read: zeroed in place, once.
            record.vaultKey.wipeStorage()
            formerLocator.wipeStorage()
            record.identityKey.wipeStorage()
        }
        let number = try writer.allocateUsable()
        record.ownFile = FileRef(device: 0, number: number)
        if movesNames {
            let move = try startNamesMove()
            defer { move.wipeKeys() }
            // Its own buffer: sealing the record zeroes the record's keys in place.
            record.rootLocator = move.rootLocator.withUnsafeBufferPointer { Array($0) }
            root.extensions.append(IndexRootV2.Extension(tag: NamesMove.extensionTag, value: move.encode()))
            root.extensions.sort { $0.tag < $1.tag }
        }
        try writer.storeFile(number, try FormatTwoVault.sealOwnerRecord(record, patternSecrets: newPattern, random: session.random))
        let newName = try FormatTwoKeys.unlockNameBytes(locator: newPattern.locator)
        // Grants (role 2) and ended grants (role 4) stay: they name the vault's identity, not its pattern.
        root.specialFiles = [IndexRootV2.SpecialFile(file: record.ownFile, role: .ownerUnlock, name: newName),
                             IndexRootV2.SpecialFile(file: owner.file, role: .retiredOwner, name: owner.name)]
            + root.specialFiles.filter { $0.role == .grant || $0.role == .endedGrant }
        // A synced vault's remote record is sealed with this pattern: the next sync writes the new
        // pattern's and removes this one, whose name the root keeps until then (tag 2). After an
        // earlier change not yet synced, the remote's record is still the one the tag names.
        if root.extensions.contains(where: { $0.tag == SyncBase.extensionTag }) {
            if !root.extensions.contains(where: { $0.tag == IndexRootV2.formerRemoteUnlockTag }) {
                let remoteName = try FormatTwoKeys.unlockNameBytes(locator: session.patternSecrets.locator, location: Label.remoteLocation)
                root.extensions.append(IndexRootV2.Extension(tag: IndexRootV2.formerRemoteUnlockTag, value: remoteName))
            }
            // The remote holds the vault at the names that move here; the next sync moves it
            // too (tag 4; a move not synced since keeps the one it recorded).
            if movesNames, !root.extensions.contains(where: { $0.tag == FormerRemoteNames.extensionTag }) {
                let former = FormerRemoteNames(rootLocator: secrets.locator.copyBytes(), namesKey: secrets.namesKey.copyBytes())
                root.extensions.append(IndexRootV2.Extension(tag: FormerRemoteNames.extensionTag, value: former.encode()))
                former.rootLocator.wipeStorage()
                former.namesKey.wipeStorage()
            }
            root.extensions.sort { $0.tag < $1.tag }
        }
        let before = committer.formatTwo, generation = committer.generation
        committer.formatTwo = root
        committer.formatTwo?.rootDue = true
        // The new record is synced before the root that lists it: the commit point.
        do { try commit() } catch {
            // Before the commit point the vault is still the old pattern's, in memory too.
            if committer.generation == generation {
                committer.formatTwo = before
            }
            throw error
        }
        progress(1)
        try finishPatternChange(progress: progress)
    }

    /// Steps 3–5 of §13.12, each only where its effect is not there yet: after a crash any
    /// writing open comes here, and so does the change itself after its commit point.
    mutating func finishPatternChange(progress: (Int) -> Void = { _ in }) throws {
        guard var root = committer.formatTwo, root.specialFiles.contains(where: { $0.role == .retiredOwner }),
              let owner = root.specialFiles.first(where: { $0.role == .ownerUnlock }) else { return }
        let formers = root.specialFiles.filter { $0.role == .retiredOwner }
        if let value = root.extensions.first(where: { $0.tag == NamesMove.extensionTag })?.value {
            let move = try NamesMove.decode(value)
            defer { move.wipeKeys() }
            try moveNames(move, owner: owner, formers: formers)
            for item in root.extensions where item.tag == NamesMove.extensionTag { item.value.wipeStorage() }
            root.extensions.removeAll { $0.tag == NamesMove.extensionTag }
        } else {
            try completeRename(try name(owner.file.number), to: FileName.encode(owner.name))
            try storage.syncFolder()
            for former in formers {
                let deviceName = try name(former.file.number)
                try completeRename(FileName.encode(former.name), to: deviceName)
                try storage.syncFolder()
                if try storage.entryExists(deviceName) {
                    try storage.write(deviceName, offset: 0, bytes: try session.random.bytes(Format.fileSize))
                    try storage.sync([deviceName])
                }
                // Device 0's file: another device that followed the change has no number to free.
                if former.file.device == root.localDevice { writer.release(former.file.number) }
            }
        }
        progress(2)
        root.specialFiles.removeAll { $0.role == .retiredOwner }
        committer.formatTwo = root
        committer.formatTwo?.rootDue = true
        try commit()
        progress(3)
    }

    /// A rename that may have happened already. Where both names exist and hold the same bytes
    /// (a copy put back beside the file) the old name goes; where they differ, the old name is
    /// not ours (a vault made at that pattern's name since) and stays.
    func completeRename(_ from: String, to: String) throws {
        guard try storage.entryExists(from) else { return }
        guard try storage.entryExists(to) else { return try storage.rename(from, to: to) }
        if let source = try? storage.read(from), let target = try? storage.read(to), source == target {
            try storage.remove(from)
        }
    }
}
