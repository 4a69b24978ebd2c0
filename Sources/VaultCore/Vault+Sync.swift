import VaultCrypto
import VaultFormat
import VaultStore

/// The calls a sync makes on a vault (docs/SYNC-DESIGN.md §3.4, FORMAT.md §13.11), each under
/// the vault's lock. The sync itself (rclone, the merge, the order of transfers) is `VaultSync`'s;
/// here are the keys, the records and the storage's files.
extension Vault {
    /// The name of the vault's unlock record on a remote.
    public func remoteUnlockName() throws -> String { try syncLocked { try $0.remoteUnlockName() } }

    /// The remote's keys from its unlock record (nil: the remote holds none, and gets this
    /// vault's). Throws `SyncRefusal.otherLineage` for a vault of this pattern that is not this one.
    public func openRemote(unlockFile: [UInt8]?) throws -> RemoteVault { try syncLocked { try $0.openRemote(unlockFile: unlockFile) } }

    /// Another device changed the pattern and synced (FORMAT.md §13.12, "Another device follows
    /// the change"): this vault, new, the new pattern's, takes this storage's state under the
    /// remote record's keys (`unlockFile`) and follows the change in it; false, and nothing
    /// changed, when this storage holds no state to follow (the join goes on, and refuses as
    /// before). `remoteSlots` reads the remote's files at the names given. `step` is a test's
    /// crash injection.
    public func followPatternChange(unlockFile: [UInt8], remoteSlots: ([String]) throws -> [[UInt8]?],
                                    step: (String) throws -> Void = { _ in }) throws -> Bool {
        try state.withLock { state in
            guard !state.isLocked else { throw VaultError.locked }
            do {
                guard let followed = try state.followedPatternChange(unlockFile: unlockFile, remoteSlots: remoteSlots, step: step) else {
                    return false
                }
                state.wipeReplaced()
                state = followed
                return true
            } catch {
                // The remote's failures and a test's stop pass as they are.
                switch error {
                case is StoreError, is CryptoError, is FormatError: throw VaultError.wrap(error)
                default: throw error
                }
            }
        }
    }

    /// A sync that follows a withdrawal (FORMAT.md §14.8, "The file count of a follow"), before
    /// anything comes down: the two free files its new slots take; with fewer than two, a group
    /// is made and committed first, under the old keys.
    public func prepareFollow(_ remote: RemoteVault) throws {
        guard remote.follows else { return }
        try afterWritesBehind { state in
            guard !state.isLocked else { throw VaultError.locked }
            try state.loadWholeIndex()
            try state.prepareFollow()
        }
    }

    /// The remote table's devices whose changes since the base the owner's sync after a
    /// withdrawal leaves out: those of the people withdrawn (FORMAT.md §14.8).
    public func withdrawnDevices(_ remote: RemoteVault) throws -> Set<UInt16> {
        guard remote.movesRemote else { return [] }
        return try syncLocked { try $0.withdrawnDevices(remote) }
    }

    /// Reads the remote root from the files of `remote.rootSlotNames()` (nil where a slot has
    /// no file): the newest of the record's slots, or after a withdrawal of RL''s when newer.
    public func readRemoteRoot(_ remote: RemoteVault, slotFiles: [[UInt8]?]) throws {
        try syncLocked { try $0.readRemoteRoot(remote, files: slotFiles) }
    }

    /// The generation of the remote root among the files of `remote.rootSlotNames()`, 0 for
    /// none, read again just before a root goes up (another device may have written one
    /// meanwhile); a root found at the other keys' slots than the one read counts as changed.
    public func remoteGeneration(_ remote: RemoteVault, slotFiles: [[UInt8]?]) throws -> UInt64 {
        try syncLocked { state in
            let (root, moved) = try VaultState.newestRemoteRoot(remote, files: slotFiles, readsIndexThree: state.readsIndexThree)
            defer { root?.wipeKeys() }
            guard moved == remote.readMoved else { return UInt64.max }
            return root?.generation ?? 0
        }
    }

    /// The remote root's pages of other devices that the local storage lacks under their keys.
    public func remotePagesToFetch(_ remote: RemoteVault, fetched: Set<String>) throws -> [String] {
        try syncLocked { try $0.remotePagesToFetch(remote, fetched: fetched) }
    }

    /// A sync is about to download: the names the last commit references are not written over
    /// before the commit that adopts their new bytes (FORMAT.md §13.11, "Downloads are staged").
    public func beginDownloads() throws { try syncLocked { try $0.beginDownloads() } }

    /// A mounted vault's round is about to download: its pending changes are committed first,
    /// so that the names kept are all its last commit references (its later commits only drop
    /// some of the other devices' files).
    public func beginLiveDownloads() throws {
        try afterWritesBehind { state in
            guard !state.isLocked else { throw VaultError.locked }
            try state.loadWholeIndex()
            try state.commit()
            try state.beginDownloads()
        }
    }

    /// Grants of other devices the committed root lists and this storage lacks (a sync cut
    /// after its merge's commit): they come down whether or not this sync merges.
    public func missingGrants(_ remote: RemoteVault) throws -> [String] { try syncLocked { try $0.missingGrants(remote) } }

    /// The sync's commit is done: files it staged that no merge took go.
    public func endDownloads() throws { try syncLocked { $0.endDownloads() } }

    /// Of the names to download, those to write at their names (the last commit does not
    /// reference them) and those to `stage`; names staged already are in neither.
    public func splitDownloads(_ names: [String]) throws -> (direct: [String], staged: [String]) {
        try syncLocked { $0.splitDownloads(names) }
    }

    /// A downloaded file for the name `name`, written into a free file of this device until the
    /// commit that adopts it puts it in place.
    public func stage(_ name: String, _ file: [UInt8]) throws { try syncLocked { try $0.stage(name, file) } }

    /// The remote's items, read from its pages in the local storage.
    public func loadRemoteTree(_ remote: RemoteVault) throws -> [SyncEntry] { try syncLocked { try $0.loadRemoteTree(remote) } }

    /// This vault's side of a sync.
    public func localSyncView(deviceName: String) throws -> LocalSyncView { try syncLocked { try $0.localSyncView(deviceName: deviceName) } }

    /// The sync base the committed root records (nil: never synced), without the tree's entries.
    public func recordedSyncBase() throws -> RecordedSyncBase? { try syncLocked { try $0.recordedSyncBase() } }

    /// Makes the merged tree this vault's (not yet committed); returns the other devices' files
    /// to download into the storage before `finishMerge`.
    public func applyMerge(_ remote: RemoteVault, merged: [MergedItem], nextItemID: UInt64, deviceName: String) throws -> [String] {
        try syncLocked { try $0.applyMerge(remote, merged: merged, nextItemID: nextItemID, deviceName: Array(deviceName.utf8.prefix(64))) }
    }

    /// Before a sync's download writes these names into the storage (rclone, past the storage
    /// folder's own writes): they count as this session's files, which the lock moves to a later
    /// whole second (docs/FORMAT.md §11.2).
    public func willDownload(_ names: [String]) throws { try storage.willOverwrite(names) }

    /// Puts a sync's direct batch, which came down into `downloads` whole, at its names
    /// (FORMAT.md §13.11), each with the rest of its group in the remote root's device table
    /// (`companions`: those of the rest that came down too, a join's pages').
    public func placeDownloads(_ names: [String], companions: [String] = [], from downloads: DownloadFolder, remote: RemoteVault) throws {
        try syncLocked { try $0.placeDownloads(names, companions: companions, from: downloads, remote: remote) }
    }

    /// The rest of the groups of a join's page downloads that the remote lists: they come down
    /// with the pages (`VaultState.joinGroupCompanions`). Empty when this is not a join.
    public func joinGroupCompanions(_ names: [String], remote: RemoteVault, listed: Set<String>) throws -> [String] {
        try syncLocked { try $0.joinGroupCompanions(names, remote: remote, listed: listed) }
    }

    /// Checks the downloaded files against their keys and makes other devices' groups whole.
    public func finishMerge(_ remote: RemoteVault, downloaded: [String]) throws {
        try syncLocked { try $0.finishMerge(remote, downloaded: downloaded) }
    }

    /// After a join failed short of its commit: the files it placed go, so that the next sync
    /// joins again from what was here before it (FORMAT.md §13.12).
    public func removeJoinLeftovers(_ remote: RemoteVault) throws {
        try syncLocked { try $0.removeJoinLeftovers(remote) }
    }

    /// Commits the state (merged or not) before its remote root goes up, with the remote's
    /// tree as read for the base (FORMAT.md §13.11): the state becomes the base only once that
    /// root is up, `syncBasePublished`.
    public func commitSync(_ remote: RemoteVault) throws {
        try syncLocked { try $0.commitSyncBase(remote) }
    }

    /// The remote root of the last sync's commit is up: the commit's state becomes the base,
    /// and files only the remote root before referenced may be reused again.
    public func syncBasePublished() throws {
        // A mount locked meanwhile keeps its base: its next sync finds its root up and confirms.
        try afterWritesBehind { state in
            guard !state.isLocked else { return }
            try state.confirmSyncBase()
        }
    }

    /// The remote holds this device's last sync's root (`generation`), which that sync never
    /// learnt, and nothing changed here since: the state becomes the base.
    public func confirmLandedSync(generation: UInt64) throws {
        try syncLocked { try $0.confirmLandedSyncBase(generation: generation) }
    }

    /// A sync with nothing to send read this device's root back from `remote`: the pins kept
    /// for the root the sync before read go, at one commit, when there are any.
    public func releaseReadRootPins(_ remote: RemoteVault) throws {
        try syncLocked { try $0.releaseReadRootPins(remote) }
    }

    /// What goes up (blocks first: chunks and packs, then pages) and what goes from the remote:
    /// own files the committed state references under a key the remote root does not, own
    /// files the remote lacks, and files of own groups the remote root owned and this one does not.
    /// Without `publishing` (no root goes up) only what the remote root references and lacks.
    public func syncTransfer(_ remote: RemoteVault, remoteNames: Set<String>, publishing: Bool = true) throws -> SyncTransfer {
        try syncLocked { try $0.syncTransfer(remote, remoteNames: remoteNames, publishing: publishing) }
    }

    /// The remote root read is the one the committed state would publish (but for its
    /// generation and writer), and no record or keys are to go up: nothing to send.
    public func remoteHoldsState(_ remote: RemoteVault) throws -> Bool { try syncLocked { try $0.remoteHoldsState(remote) } }

    /// After `commitSync`: the remote root read is the committed state already, so nothing goes
    /// up; the pins are then those the commit recorded (`VaultState.remoteHoldsCommittedState`).
    public func remoteHoldsCommittedState(_ remote: RemoteVault) throws -> Bool {
        try syncLocked { try $0.remoteHoldsCommittedState(remote) }
    }

    /// The committed state as remote root `generation`, original slot first, then its copy.
    public func remoteRootFiles(generation: UInt64) throws -> [(name: String, file: [UInt8])] {
        try syncLocked { try $0.remoteRootFiles(generation: generation) }
    }

    /// The remote's unlock record name of a pattern this vault had before a change not yet
    /// synced (FORMAT.md §13.12): the next sync removes it there. Nil: none.
    public func formerRemoteUnlockName() throws -> String? {
        try syncLocked { state in
            state.committer.formatTwo?.extensions.first { $0.tag == IndexRootV2.formerRemoteUnlockTag }.map { FileName.encode($0.value) }
        }
    }

    /// The files a synced move of an upgraded vault's names left at the old pattern's names on
    /// the remote, among `listed` (FORMAT.md §13.12, "with sync"): they go once the new
    /// pattern's record is up. Nil: no such move is to be synced.
    public func formerRemoteFiles(listed: Set<String>) throws -> [String]? {
        try syncLocked { try $0.formerRemoteFiles(listed: listed) }
    }

    /// Whether `listed` holds a file of this device's own groups (the remote holds every group
    /// whole): the vault is there, whatever its record and slots are named from.
    public func ownFilesListed(_ listed: Set<String>) throws -> Bool {
        try syncLocked { state in
            guard let formatTwo = state.committer.formatTwo else { return false }
            let special = Set(formatTwo.specialFiles.map(\.file.raw))
            for raw in state.writer.allocator.ownedGroups.fileNumbers(ofDevice: Int(formatTwo.localDevice)) where !special.contains(raw) {
                if listed.contains(try state.name(raw)) { return true }
            }
            return false
        }
    }

    /// Commits a root that no longer names a former pattern's remote record (it is gone there),
    /// nor the names a move left on the remote (tag 4: gone too).
    public func forgetFormerRemoteUnlock() throws {
        try syncLocked { state in
            let tags: Set<UInt16> = [IndexRootV2.formerRemoteUnlockTag, FormerRemoteNames.extensionTag]
            guard let extensions = state.committer.formatTwo?.extensions, extensions.contains(where: { tags.contains($0.tag) }) else { return }
            for item in extensions where item.tag == FormerRemoteNames.extensionTag { item.value.wipeStorage() }
            state.committer.formatTwo?.extensions.removeAll { tags.contains($0.tag) }
            state.committer.formatTwo?.rootDue = true
            try state.commit()
        }
    }

    /// The remote's slot names of the vault's keys before a withdrawal not yet synced (FORMAT.md
    /// §14.8): they go once the remote's record names the new keys. Empty: none.
    public func rotatedRemoteSlotNames() throws -> [String] { try syncLocked { try $0.rotatedRemoteSlotNames() } }

    /// The remote is at the vault's new keys: the owner's record stops naming the old ones.
    public func forgetRotation() throws { try syncLocked { try $0.forgetRotation() } }

    /// The remote unlock record of this vault (a first publish).
    public func remoteUnlockFile() throws -> [UInt8] { try syncLocked { try $0.remoteUnlockFile() } }

    /// Erases keys and plaintext without committing (a sync that failed leaves the local
    /// storage at its last commit). Like `lock`, it returns once the loads ahead are done.
    public func discard() {
        defer { loadsInFlight.wait() }
        state.withLock { state in if !state.isLocked { state.wipe() } }
    }

    private func syncLocked<R>(_ body: (inout VaultState) throws -> R) throws -> R {
        try state.withLock { state in
            guard !state.isLocked else { throw VaultError.locked }
            // A sync pins and merges: the pins of the base as committed, before anything changes.
            do { try state.readWholeVault(); return try body(&state) } catch let refusal as SyncRefusal { throw refusal } catch {
                switch error {
                case is SharingError, is GrantSeal.Failure: throw error
                default: throw VaultError.wrap(error)
                }
            }
        }
    }
}
