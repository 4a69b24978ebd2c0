import Foundation
import VaultCore
import VaultFormat

/// `mount --sync`: `VaultSynchronizer`'s steps on the vault a mount serves (docs/SYNC-DESIGN.md
/// §3.6), with no second open of its storage. Listing, downloads and uploads run outside the
/// vault's lock: the other devices' files a merge may need are fetched and checked first, so
/// that the merge and its commit take the lock once (`Vault.commitLive`), inside
/// `holdingRequests` (the file system's own lock: no request of several vault calls sees half
/// of a merge). What the merge changed goes to `pulled` (the kernel's caches) before anything
/// goes up. A round cut short anywhere leaves the vault as committed and the remote as it was
/// or a step further; the next round completes it. A round that loses a race with another
/// device runs again at once (`run`).
public struct MountedSynchronizer: Sendable {
    public let vault: Vault
    public let remote: RemoteStorage
    /// The storage folder the mount serves: downloads land in it, uploads leave from it.
    public let storageFolder: String
    public let deviceName: String
    /// Unix seconds: the time in conflict names.
    public var now: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }

    public init(vault: Vault, remote: RemoteStorage, storageFolder: String, deviceName: String) {
        self.vault = vault
        self.remote = remote
        self.storageFolder = storageFolder
        self.deviceName = deviceName
    }

    public typealias Holding = (() throws -> LiveSyncCommit?) throws -> LiveSyncCommit?

    /// How many times a round that lost a race runs again before it fails.
    static let raceRetries = 3

    /// One round, run again when it loses a race: another device's root went up while it ran
    /// (its commit kept the remote's tree as read for its base, so the next run merges with that
    /// root), or files of the root it read went from the remote meanwhile. `pulled` is told
    /// what a merge changed, once it is committed; `filesMoved` hears each batch of files move
    /// (a terminal shows the mount's first round).
    public func run(holdingRequests: Holding = { try $0() }, pulled: (PulledChanges) -> Void = { _ in },
                    filesMoved: ((SyncProgress) -> Void)? = nil) throws -> SyncSummary {
        var retries = 0
        while true {
            do {
                return try round(holdingRequests: holdingRequests, pulled: pulled, filesMoved: filesMoved)
            } catch SyncRefusal.raced where retries < Self.raceRetries {
                retries += 1
            }
        }
    }

    private func round(holdingRequests: Holding, pulled: (PulledChanges) -> Void,
                       filesMoved: ((SyncProgress) -> Void)?) throws -> SyncSummary {
        var summary = SyncSummary()
        let listing = try remote.list()
        let remoteNames = Set(listing.storageFiles)
        let unlockName = try vault.remoteUnlockName()
        let unlockFile = try remoteNames.contains(unlockName) ? remote.read(unlockName) : nil
        // A new, empty vault and nothing on the remote: nothing to do until the first change.
        if unlockFile == nil && vault.isNewVault { return summary }
        let remoteVault = try vault.openRemote(unlockFile: unlockFile)
        if remoteVault.hasRecord {
            let slots = try remote.read(remoteVault.rootSlotNames(), listed: remoteNames)
            try vault.readRemoteRoot(remoteVault, slotFiles: slots)
        }
        var remoteEntries: [SyncEntry] = []
        if remoteVault.generation > 0 {
            do {
                try download(try vault.remotePagesToFetch(remoteVault), &summary, filesMoved)
                remoteEntries = try vault.loadRemoteTree(remoteVault)
                let fetched = try vault.remoteFilesToFetch(remoteVault)
                try download(fetched, &summary, filesMoved)
                try vault.checkFetched(remoteVault, names: fetched)
            } catch let error as RemoteError {
                // Files of a root that another device replaced meanwhile may be gone since.
                guard case .missingFiles = error else { throw error }
                let files = try remote.read(remoteVault.rootSlotNames())
                guard try vault.remoteGeneration(remoteVault, slotFiles: files) == remoteVault.generation else { throw SyncRefusal.raced }
                throw error
            }
        }
        let read = remoteVault.generation
        var actions: [MergeAction] = []
        let follows = remoteVault.follows
        let planned = try holdingRequests {
            try vault.commitLive(remoteVault, deviceName: deviceName, remoteNames: remoteNames) { view in
                try plan(view, remoteEntries, remoteVault, follows: follows, &actions)
            }
        }
        guard let committed = planned else { return summary }
        summary.actions = actions
        summary.conflicts = actions.filter {
            switch $0 {
            case .keptBothVersions, .renamed: true
            default: false
            }
        }.count
        if !committed.pulled.isEmpty { pulled(committed.pulled) }
        let transfer = committed.transfer
        // After a withdrawal the remote moves to the new keys (FORMAT.md §14.8).
        let movesRemote = remoteVault.movesRemote
        try transfer.uploadBeforeRoot(to: remote, from: storageFolder, movesRemote: movesRemote, filesMoved: filesMoved, summary: &summary)
        // §3.4 step 7, as in `VaultSynchronizer`: a root written meanwhile is not overwritten.
        let files = try remote.read(remoteVault.rootSlotNames())
        guard try vault.remoteGeneration(remoteVault, slotFiles: files) == read else { throw SyncRefusal.raced }
        let checked = ContinuousClock.now
        if let unlock = committed.unlockFile, !movesRemote {
            try remote.write(unlockName, contents: unlock)
            summary.filesUp += 1
        }
        for (name, file) in committed.rootFiles {
            try remote.write(name, contents: file)
            summary.filesUp += 1
        }
        // Another device's root written over this one (`stillHolds`): not up; `run` goes again.
        guard try remote.stillHolds(committed.rootFiles, settle: ContinuousClock.now - checked) else { throw SyncRefusal.raced }
        if movesRemote, let unlock = committed.unlockFile {
            try transfer.finishMove(to: remote, from: storageFolder, unlockName: unlockName, record: { unlock }, summary: &summary)
        }
        try vault.syncBasePublished()
        try remote.delete(transfer.remove)
        summary.filesRemoved = transfer.remove.count
        let retired = try vault.rotatedRemoteSlotNames()
        if !retired.isEmpty {
            let present = retired.filter(remoteNames.contains)
            try remote.delete(present)
            summary.filesRemoved += present.count
            try vault.forgetRotation()
        }
        return summary
    }

    /// What the round does, decided on the local view under the vault's lock (`SyncDecision`):
    /// nothing when neither side changed since the base; the merge when the remote did; a
    /// publish when only this side did; a confirmation when the remote holds this device's
    /// root that a round cut short never learnt was up. After a withdrawal the owner publishes,
    /// and a grantee (`follows`) merges to take the new keys (FORMAT.md §14.8).
    private func plan(_ view: LocalSyncView, _ remoteEntries: [SyncEntry], _ remoteVault: RemoteVault, follows: Bool,
                      _ actions: inout [MergeAction]) throws -> LiveSyncPlan? {
        let read = remoteVault.generation
        if view.isNew && read == 0 { throw SyncRefusal.noVault }
        let decision = SyncDecision(view: view, remoteGeneration: read, remoteWriter: remoteVault.writerDevice)
        guard decision.publishes || remoteVault.rotated else {
            return decision.confirmsLanded ? LiveSyncPlan(merged: nil, nextItemID: view.nextItemID, readGeneration: read, publishes: false) : nil
        }
        guard decision.merges || follows else { return LiveSyncPlan(merged: nil, nextItemID: view.nextItemID, readGeneration: read) }
        let trees = SyncTrees(local: view.entries, remote: remoteEntries)
        let context = TreeMerge.Context(localDevice: view.localDevice, deviceNames: view.deviceNames, time: now(),
                                        nextItemID: view.nextItemID)
        let result = TreeMerge.merge(base: view.base.map(trees.base), local: SyncTrees.tree(trees.local),
                                     remote: SyncTrees.tree(trees.remote), context: context)
        actions = result.actions
        return LiveSyncPlan(merged: trees.mergedItems(result.tree), nextItemID: result.nextItemID, readGeneration: read)
    }

    private func download(_ names: [String], _ summary: inout SyncSummary, _ filesMoved: ((SyncProgress) -> Void)?) throws {
        guard !names.isEmpty else { return }
        try remote.download(names, into: storageFolder, filesDone: SyncProgress.batch(.down, total: names.count, to: filesMoved))
        summary.filesDown += names.count
    }
}
