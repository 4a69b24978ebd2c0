import VaultCrypto
import VaultFormat
import VaultStore

/// A sync's steps that read the state as it is (`dotsafe sync`'s and a mount's), and a mounted
/// vault's sync (docs/SYNC-DESIGN.md §3.6): the other devices' files fetched before the merge,
/// so that the merge, its checks and its commit take the vault's lock once, briefly.
extension VaultState {
    /// `known`: the base a mount's round read before its commits (`recordedSyncBase`), taken
    /// as it is while the committed root still records it (only a sync's commits change it).
    func localSyncView(deviceName: String, known: RecordedSyncBase? = nil) throws -> LocalSyncView {
        guard let formatTwo = committer.formatTwo else { throw SyncRefusal.formatOne }
        let entries = try VaultState.entries(tree.allItems, session.arena)
        let recorded = try known.flatMap(stillRecorded) ?? recordedSyncBase()
        let header = recorded?.header, base = recorded?.base
        var names: [UInt16: String] = [:]
        for (index, device) in formatTwo.devices.enumerated() { names[UInt16(index)] = String(decoding: device.name, as: UTF8.self) }
        names[formatTwo.localDevice] = deviceName
        return LocalSyncView(entries: entries, header: header, base: base, generation: committer.generation, hasChanges: hasChanges, isNew: isNew,
                             localDevice: formatTwo.localDevice, deviceNames: names, nextItemID: tree.nextItemID)
    }

    /// `known` when the committed root's sync base has its generations (its pieces not read again).
    private func stillRecorded(_ known: RecordedSyncBase) throws -> RecordedSyncBase? {
        guard !isNew, let value = committer.formatTwo?.extensions.first(where: { $0.tag == SyncBase.extensionTag })?.value else { return nil }
        let header = try SyncBase.Header.decode(value)
        for piece in header.pieces { piece.key.wipeStorage() }
        let now = [header.localGeneration, header.readGeneration, header.publishedGeneration]
        return now == [known.header.localGeneration, known.header.readGeneration, known.header.publishedGeneration] ? known : nil
    }

    /// The sync base the committed root records (nil: this device never synced), without the
    /// local tree's entries: a mount's round checks the remote against it before it downloads.
    func recordedSyncBase() throws -> RecordedSyncBase? {
        guard let formatTwo = committer.formatTwo else { throw SyncRefusal.formatOne }
        guard !isNew, let value = formatTwo.extensions.first(where: { $0.tag == SyncBase.extensionTag })?.value else { return nil }
        let root = try committer.rootV2(formatTwo, generation: committer.generation, releasing: [],
                                        nextItemID: tree.nextItemID, writer: writer, arena: session.arena)
        defer { root.wipeKeys() }
        let read = try VaultState.readSyncBase(root, storage: storage, secrets: secrets)
        var header = try SyncBase.Header.decode(value)
        for piece in header.pieces { piece.key.wipeStorage() }
        header.pieces = []
        return RecordedSyncBase(header: header, base: read?.base, localDevice: formatTwo.localDevice)
    }

    /// `publishing` false: no root goes up, so only what the remote root references and the
    /// remote lacks (it heals) is sent. In index 3 the commit that records a sync's root as up
    /// can rewrite a file block (its pins changed, FORMAT.md §15.4): a page no remote root
    /// references, which a sync with nothing to publish sent again at every run.
    func syncTransfer(_ remote: RemoteVault, remoteNames: Set<String>, publishing: Bool = true) throws -> SyncTransfer {
        guard let formatTwo = committer.formatTwo else { throw SyncRefusal.formatOne }
        let local = formatTwo.localDevice
        let theirs = remote.uses
        let pages = Set((committer.pageTable.pages.compactMap(\.ref) + committer.pageTable.parentRefs).map(\.fileNumber))
        var blocks: [String] = [], pageNames: [String] = [], transfer = SyncTransfer()
        var referenced = Set<UInt64>()
        for use in referencedFiles() where writer.allocator.isOwnDevice(use.file) {
            referenced.insert(use.file)
            let name = try self.name(use.file)
            let known = theirs.contains(use), listed = remoteNames.contains(name)
            guard publishing ? !known || !listed : known && !listed else { continue }
            if pages.contains(use.file) { pageNames.append(name) } else { blocks.append(name) }
        }
        let special = Set(formatTwo.specialFiles.map(\.file.raw))
        var others: [String] = []
        for raw in writer.allocator.ownedGroups.fileNumbers(ofDevice: Int(local)) where !referenced.contains(raw) && !special.contains(raw) {
            let name = try self.name(raw)
            // With no remote root every file goes, a torn one that a killed upload left included.
            if remote.root == nil || !remoteNames.contains(name), try storage.entryExists(name) { others.append(name) }
        }
        // Own grants go up at their names (every storage of the vault holds them, §14.9),
        // and a file at a grant's number's own name is not the vault's any more. One sealed
        // again since the remote got it goes up again: after a withdrawal all of them, after a
        // share over an ended grant that one (the remote root lists it with its old role).
        var remoteRoles: [[UInt8]: IndexRootV2.SpecialFile.Role] = [:]
        for special in remote.root?.specialFiles ?? [] { remoteRoles[special.name] = special.role }
        // A withdrawal, or a move of an upgraded vault's names not synced yet (tag 4, §13.12),
        // sealed every grant here again, another device's too: all go up.
        let moves = movesRemote(remote) || namesMoveToSync
        for special in formatTwo.specialFiles where special.isGrantFile && (moves || writer.allocator.isOwnDevice(special.file.raw)) {
            let name = FileName.encode(special.name)
            if remote.root == nil || remoteRoles[special.name] != special.role || !remoteNames.contains(name) || remote.rotated || moves {
                transfer.grants.append(name)
            }
            guard writer.allocator.isOwnDevice(special.file.raw) else { continue }
            let numberName = try self.name(special.file.raw)
            if remoteNames.contains(numberName) { transfer.remove.append(numberName) }
        }
        // The owner's record lies on the remote at its remote name. A pattern change makes
        // the record of a number that was a free file there, which the remote got whole with
        // its group at its number's own name: that file is not the vault's any more (R-SYN-2).
        for special in formatTwo.specialFiles where special.role == .ownerUnlock && writer.allocator.isOwnDevice(special.file.raw) {
            let numberName = try self.name(special.file.raw)
            if remoteNames.contains(numberName) { transfer.remove.append(numberName) }
        }
        transfer.blocks = Array(Set(blocks)).sorted()
        transfer.groupFiles = others.sorted()
        transfer.pages = Array(Set(pageNames)).sorted()
        try addOtherDevicesFiles(&transfer, remote, remoteNames: remoteNames)
        if let old = remote.root, Int(local) < old.devices.count, !remote.joins {
            for range in old.devices[Int(local)].ownedGroups {
                for number in range.fileNumbers {
                    let raw = FileRef(device: local, number: number).raw
                    guard !writer.allocator.owns(raw) else { continue }
                    let name = try self.name(raw)
                    if remoteNames.contains(name) { transfer.remove.append(name) }
                }
            }
        }
        return transfer
    }

    /// Whether the remote root read is the one this committed state would publish, but for
    /// its generation and writer: then nothing goes up (SYNC-DESIGN §3.3). After a merge that
    /// took only the other side's changes, or a commit here that changed nothing the remote
    /// holds, a publish would send a new root of the same state, and the other device, merging
    /// it, would send one back at its next sync, and so on at every sync.
    func remoteHoldsState(_ remote: RemoteVault) throws -> Bool {
        guard let formatTwo = committer.formatTwo, let read = remote.root, !remote.joins, !isNew, !hasChanges,
              remote.hasRecord, !remote.recordOutdated, !remote.rotated else { return false }
        var root = try committer.rootV2(formatTwo, generation: read.generation, releasing: [], nextItemID: tree.nextItemID, writer: writer,
                                        arena: session.arena, forRemote: true)
        defer { root.wipeKeys() }
        root.writerDevice = read.writerDevice
        return root == read
    }

    /// The other devices' files that the remote root's items reference under a key the local
    /// state does not use them with, or that the storage lacks: what a merge may need (not the
    /// files of the items `leavingOut`, whose content it will not take).
    func remoteFilesToFetch(_ remote: RemoteVault, leavingOut: Set<UInt64> = []) throws -> [String] {
        guard let root = remote.root, let contents = remote.contents else { return [] }
        let names = try Self.remoteNames(remote, root)
        defer { names.wipe() }
        let present = referencedFiles()
        var wanted = Set<String>()
        let items = leavingOut.isEmpty ? contents.items : contents.items.filter { !leavingOut.contains($0.key) }
        for use in referencedFiles(pages: [], items: items) where !isOwn(use.file, joining: remote.joins) {
            let name = try names.fileName(use.file)
            // Held: read here under this key at this name, and not a fill of this sync (§13.11).
            if try !present.contains(use) || self.name(use.file) != name || !holds(name) { wanted.insert(name) }
        }
        return wanted.union(try missingGrants(remote)).sorted()
    }

    /// The owner's sync after a withdrawal (FORMAT.md §14.8): the remote moves to the new keys.
    func movesRemote(_ remote: RemoteVault) -> Bool { remote.movesRemote }

    /// Each fetched file opens under the key the remote's records give it.
    mutating func checkFetched(_ remote: RemoteVault, names: [String]) throws {
        guard let root = remote.root, let contents = remote.contents, !names.isEmpty else { return }
        let naming = try Self.remoteNames(remote, root)
        defer { naming.wipe() }
        try checkOpens(Set(names), items: contents.items, naming: naming)
    }

    /// A mounted vault's steps 4–5 in one: pending changes committed, the view `plan` decides
    /// on, the merge (every other device's file it needs already here, or it stops before
    /// changing anything), the commit with the sync base, and what then goes up. Nil when
    /// nothing goes up.
    mutating func commitLive(_ remote: RemoteVault, deviceName: String, remoteNames: Set<String>, known: RecordedSyncBase?,
                             plan: (LocalSyncView) throws -> LiveSyncPlan?) throws -> LiveSyncCommit? {
        try commit()
        // What the round staged and no merge took goes once this is done (or failed).
        defer { endDownloads() }
        guard remote.joins == isNew else { throw SyncRefusal.raced }
        let view = try localSyncView(deviceName: deviceName, known: known)
        guard let decided = try plan(view) else { return nil }
        guard decided.publishes else {
            if decided.releasesReadPins { try releaseReadRootPins(remote) } else { try confirmLandedSyncBase(generation: decided.readGeneration) }
            return nil
        }
        if decided.merged == nil && decided.staysLocalWhenHeld, try remoteHoldsState(remote) { return nil }
        remote.pulled = PulledChanges()
        if let merged = decided.merged, let contents = remote.contents, let root = remote.root {
            let naming = try Self.remoteNames(remote, root)
            defer { naming.wipe() }
            var sources: [UInt64: Item] = [:]
            for entry in merged {
                sources[entry.id] = entry.source == .remote ? contents.items[entry.sourceID] : tree.items[entry.sourceID]
            }
            for use in referencedFiles(pages: [], items: sources) where !isOwn(use.file, joining: remote.joins) {
                guard try holds(try naming.fileName(use.file)) else { throw SyncRefusal.raced }
            }
            let wanted = try applyMerge(remote, merged: merged, nextItemID: decided.nextItemID, deviceName: Array(deviceName.utf8.prefix(64)))
            try completeOtherGroups(remote)
            // Files the round staged over names the last commit references: this commit puts
            // them in place (FORMAT.md §13.11, "Downloads are staged").
            adoptStagedDownloads(wanted: Set(wanted))
        }
        let generation = decided.readGeneration + 1
        try commitSyncBase(remote)
        if decided.staysLocalWhenHeld, try remoteHoldsCommittedState(remote) {
            return LiveSyncCommit(transfer: SyncTransfer(), rootFiles: [], unlockFile: nil, pulled: remote.pulled, publishes: false)
        }
        return LiveSyncCommit(transfer: try syncTransfer(remote, remoteNames: remoteNames),
                              rootFiles: try remoteRootFiles(generation: generation),
                              unlockFile: remote.hasRecord && !movesRemote(remote) && !remote.recordOutdated ? nil : try remoteUnlockFile(), pulled: remote.pulled)
    }
}
