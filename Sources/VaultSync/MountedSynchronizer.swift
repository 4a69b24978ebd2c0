import Foundation
import VaultCore
import VaultFormat

/// `mount --sync`: `VaultSynchronizer`'s steps on the vault a mount serves (docs/SYNC-DESIGN.md
/// §3.6), with no second open of its storage. Listing, downloads and uploads run outside the
/// vault's lock; downloads are staged as `dotsafe sync`'s (`SyncDownload`). The other devices'
/// files a merge may need are fetched and checked first, so
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
    /// Called before each change to the remote and before the last local commit, with the names
    /// `VaultSynchronizer` gives them; a test throws from it to stop the round there, as a
    /// process that died would (crash injection).
    var beforeChange: (@Sendable (_ change: String) throws -> Void)?
    /// A test's stand-in for rclone's batch download, as `VaultSynchronizer.downloadFile`.
    var downloadFile: (@Sendable (_ name: String, _ path: String?) throws -> Void)?
    /// Tests only: run in a merge's commit, under the vault's lock, so that a lock meets a round
    /// still committing (`MountSync` sets it from DOTSAFE_TEST_MERGE_SECONDS).
    public var whileMerging: (@Sendable () -> Void)?
    /// `mount --sync --replace-partial-join`: as `VaultSynchronizer.replacesPartialJoin` (a
    /// join's only, so a round after it is as any other).
    public var replacesPartialJoin = false

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
    /// (a terminal shows the mount's first round). A failure after its join replaced files here,
    /// in any of its runs, is thrown as `FailedAfterJoinReplaced`, with all of them counted.
    public func run(holdingRequests: Holding = { try $0() }, pulled: (PulledChanges) -> Void = { _ in },
                    filesMoved: ((SyncProgress) -> Void)? = nil) throws -> SyncSummary {
        var retries = 0, replaced = Set<String>()
        while true {
            var opened: RemoteVault?
            do {
                return try round(holdingRequests: holdingRequests, pulled: pulled, filesMoved: filesMoved, opening: &opened)
            } catch SyncRefusal.raced where retries < Self.raceRetries {
                retries += 1
                replaced.formUnion(opened?.joinReplaced ?? [])
            } catch {
                replaced.formUnion(opened?.joinReplaced ?? [])
                guard !replaced.isEmpty else { throw error }
                throw FailedAfterJoinReplaced(failure: error, replaced: replaced.count)
            }
        }
    }

    private func round(holdingRequests: Holding, pulled: (PulledChanges) -> Void,
                       filesMoved: ((SyncProgress) -> Void)?, opening opened: inout RemoteVault?) throws -> SyncSummary {
        var summary = SyncSummary()
        let listing = try remote.list()
        let remoteNames = Set(listing.storageFiles)
        let unlockName = try vault.remoteUnlockName()
        let unlockFile = try remoteNames.contains(unlockName) ? remote.read(unlockName) : nil
        // The pattern was changed on another device: this storage's state follows it first (the
        // first round, before the mount is ready; later rounds find the vault no longer new).
        try PendingPatternChange.follow(vault, unlockFile: unlockFile, on: remote, listed: remoteNames, step: beforeChange)
        // A new, empty vault and nothing on the remote: nothing to do until the first change.
        if unlockFile == nil && vault.isNewVault { return summary }
        let remoteVault = try vault.openRemote(unlockFile: unlockFile)
        opened = remoteVault
        remoteVault.replacesPartialJoin = replacesPartialJoin
        // A pattern change made here goes to the remote as `dotsafe sync` takes it (FORMAT.md
        // §13.12); one made on another device is refused before anything changes here.
        let change = try PendingPatternChange(vault, listed: remoteNames)
        // Read once: the checks below and the plan's view (`commitLive`) take it.
        let recorded = try vault.recordedSyncBase()
        try change.refuseIfChangedElsewhere(vault, remoteVault, listed: remoteNames) { (recorded?.header.readGeneration ?? 0) > 0 }
        if change.readsRoot(remoteVault) {
            let slots = try remote.read(remoteVault.rootSlotNames(), listed: remoteNames)
            try vault.readRemoteRoot(remoteVault, slotFiles: slots)
        }
        // A remote put back to an older state, as `dotsafe sync` refuses it: before anything
        // comes down or changes here (the base changes only in this mount's rounds, one at a time).
        if let recorded,
           let refusal = RemoteRollback.refusal(header: recorded.header, base: recorded.base, localDevice: recorded.localDevice,
                                                remote: remoteVault) {
            throw refusal
        }
        // Another device's root replaced this one's after its read-back: merged without a base.
        let baseless = recorded.map {
            RemoteRollback.replacedOwnRoot(header: $0.header, localDevice: $0.localDevice, remote: remoteVault)
        } ?? false
        // A follow's slots take free files chosen before the downloads (FORMAT.md §14.8).
        try vault.prepareFollow(remoteVault)
        // Whose changes since the base the merge leaves out (FORMAT.md §14.8): not fetched.
        let withdrawn = try vault.withdrawnDevices(remoteVault)
        var remoteEntries: [SyncEntry] = [], leftOut: Set<UInt64> = []
        if remoteVault.generation > 0 {
            // From here a file the last commit references comes down staged (FORMAT.md §13.11).
            try vault.beginLiveDownloads()
            do {
                remoteEntries = try vault.removingJoinLeftovers(remoteVault) {
                    try vault.fetchRemotePages(remoteVault) { try download($0, remoteVault, &summary, filesMoved, groupsListed: remoteNames) }
                    let entries = try vault.loadRemoteTree(remoteVault)
                    var fetched = try vault.remoteFilesToFetch(remoteVault)
                    if !fetched.isEmpty {
                        leftOut = try self.leftOut(entries, withdrawn: withdrawn, baseless: baseless)
                        if !leftOut.isEmpty { fetched = try vault.remoteFilesToFetch(remoteVault, leavingOut: leftOut) }
                    }
                    try download(fetched, remoteVault, &summary, filesMoved)
                    try vault.checkFetched(remoteVault, names: fetched)
                    return entries
                }
            } catch let error as RemoteError {
                // Files of a root that another device replaced meanwhile may be gone since.
                guard case .missingFiles = error else { throw error }
                let files = try remote.read(remoteVault.rootSlotNames())
                guard try vault.remoteGeneration(remoteVault, slotFiles: files) == remoteVault.generation else { throw SyncRefusal.raced }
                throw error
            }
        }
        var outcome = MergeOutcome()
        // A root slot or the record torn on the remote goes up again, as in `VaultSynchronizer`.
        let torn = try remoteVault.generation > 0 && listing.holdsTorn(remoteVault.rootSlotNames() + [unlockName])
        let follows = remoteVault.follows, forced = change.forcesPublish(remoteVault) || torn
        let planned = try vault.removingJoinLeftovers(remoteVault) {
            try holdingRequests {
                try vault.commitLive(remoteVault, deviceName: deviceName, remoteNames: remoteNames, known: recorded) { view in
                    try plan(view, remoteEntries, remoteVault, follows: follows, forced: forced,
                             withdrawn: (devices: withdrawn, leftOut: leftOut), baseless: baseless, &outcome)
                }
            }
        }
        if let committed = planned {
            summary.actions = outcome.actions
            summary.warnings = outcome.warnings
            summary.conflicts = outcome.actions.filter {
                switch $0 {
                case .keptBothVersions, .renamed: true
                default: false
                }
            }.count
            if !committed.pulled.isEmpty { pulled(committed.pulled) }
            if committed.publishes { try publish(committed, remoteVault, to: RoundRemote(unlockName: unlockName, listed: remoteNames, change: change),
                        filesMoved: filesMoved, &summary) }
        }
        // After a pattern change, once the new record is up (read, or written above).
        try change.finish(vault, remoteVault, published: planned?.publishes == true, on: remote, beforeChange: beforeChange, summary: &summary)
        return summary
    }

    /// What a round's merge decided, and the lines it says (`SyncSummary`).
    private struct MergeOutcome {
        var actions: [MergeAction] = []
        var warnings: [String] = []
    }

    /// What a round knows of the remote when its commit goes up.
    private struct RoundRemote {
        /// This vault's record name there, and the remote's listing at the round's start.
        let unlockName: String
        let listed: Set<String>
        let change: PendingPatternChange
    }

    /// What `commitLive` committed goes up: blocks and pages, the record where it goes first, the
    /// root and its copy, then the removals (§3.4 steps 6–8, in `VaultSynchronizer`'s order).
    private func publish(_ committed: LiveSyncCommit, _ remoteVault: RemoteVault, to published: RoundRemote,
                         filesMoved: ((SyncProgress) -> Void)?, _ summary: inout SyncSummary) throws {
        let read = remoteVault.generation, unlockName = published.unlockName, change = published.change
        let transfer = committed.transfer
        // After a withdrawal the remote moves to the new keys (FORMAT.md §14.8).
        let movesRemote = remoteVault.movesRemote
        try beforeChange?("upload")
        try transfer.uploadBeforeRoot(to: remote, from: storageFolder, grantsAfterRoot: movesRemote || !change.recordFirst,
                                      filesMoved: filesMoved, summary: &summary)
        // §3.4 step 7, as in `VaultSynchronizer`: a root written meanwhile is not overwritten.
        let files = try remote.read(remoteVault.rootSlotNames())
        guard try vault.remoteGeneration(remoteVault, slotFiles: files) == read else { throw SyncRefusal.raced }
        let checked = ContinuousClock.now
        // After a move of the names the record names the new slots: it goes up after them.
        let record = movesRemote ? nil : committed.unlockFile
        if let record, change.recordFirst {
            try beforeChange?("record")
            try remote.writeContended(unlockName, contents: record)
            summary.filesUp += 1
        }
        for (name, file) in committed.rootFiles {
            try beforeChange?("root")
            try remote.writeContended(name, contents: file)
            summary.filesUp += 1
        }
        // Another device's root written over this one (`stillHolds`): not up; `run` goes again.
        guard try remote.stillHolds(committed.rootFiles, settle: ContinuousClock.now - checked) else { throw SyncRefusal.raced }
        if !change.recordFirst && !movesRemote { try transfer.uploadGrants(to: remote, from: storageFolder, beforeChange: beforeChange) }
        if let record, !change.recordFirst {
            try beforeChange?("record")
            try remote.writeContended(unlockName, contents: record)
            summary.filesUp += 1
        }
        if movesRemote, let unlock = committed.unlockFile {
            try transfer.finishMove(to: remote, from: storageFolder, unlockName: unlockName, record: { unlock },
                                    beforeChange: beforeChange, summary: &summary)
        }
        try vault.syncBasePublished()
        try beforeChange?("remove")
        try remote.delete(transfer.remove)
        summary.filesRemoved = transfer.remove.count
        let retired = try vault.rotatedRemoteSlotNames()
        if !retired.isEmpty {
            try beforeChange?("retire")
            let present = retired.filter(published.listed.contains)
            try remote.delete(present)
            summary.filesRemoved += present.count
            try beforeChange?("forget rotation")
            try vault.forgetRotation()
        }
    }

    /// What the round does, decided on the local view under the vault's lock (`SyncDecision`):
    /// nothing when neither side changed since the base; the merge when the remote did; a
    /// publish when only this side did; a confirmation when the remote holds this device's
    /// root that a round cut short never learnt was up. After a withdrawal the owner publishes,
    /// and a grantee (`follows`) merges to take the new keys (FORMAT.md §14.8). After a pattern
    /// change made here (`forced`) the round publishes, as `dotsafe sync` does (§13.12).
    private func plan(_ view: LocalSyncView, _ remoteEntries: [SyncEntry], _ remoteVault: RemoteVault, follows: Bool, forced: Bool,
                      withdrawn: (devices: Set<UInt16>, leftOut: Set<UInt64>), baseless: Bool,
                      _ outcome: inout MergeOutcome) throws -> LiveSyncPlan? {
        let read = remoteVault.generation
        if view.isNew && read == 0 { throw SyncRefusal.noVault }
        let decision = SyncDecision(view: view, remoteGeneration: read, remoteWriter: remoteVault.writerDevice)
        guard decision.publishes || remoteVault.rotated || forced else {
            guard decision.confirmsLanded || decision.readsOwnRootBack else { return nil }
            var confirms = LiveSyncPlan(merged: nil, nextItemID: view.nextItemID, readGeneration: read, publishes: false)
            confirms.releasesReadPins = decision.readsOwnRootBack
            return confirms
        }
        guard decision.merges || follows else {
            return LiveSyncPlan(merged: nil, nextItemID: view.nextItemID, readGeneration: read, staysLocalWhenHeld: !forced)
        }
        whileMerging?()
        let trees = SyncTrees(local: view.entries, remote: remoteEntries)
        let result = trees.merge(base: baseless ? nil : view.base, withdrawn: withdrawn.devices, context: TreeMerge.Context(view, time: now()))
        let merged = trees.mergedItems(result.tree)
        // The local tree changed since the fetch so that the merge takes an item it left out:
        // its files are not here; `run` goes again, deciding on the tree as it is then.
        if merged.contains(where: { $0.source == .remote && withdrawn.leftOut.contains($0.sourceID) }) { throw SyncRefusal.raced }
        outcome.actions = result.actions
        if baseless { outcome.warnings = [RemoteRollback.replacedRootWarning] }
        return LiveSyncPlan(merged: merged, nextItemID: result.nextItemID, readGeneration: read, staysLocalWhenHeld: !forced)
    }

    /// The remote items whose content the merge will not take (`WithdrawnChanges.leftOut`), in
    /// every round: a file this device deleted or rewrote since the base while the remote kept
    /// it, what withdrawn people wrote since the base (FORMAT.md §14.8). Their files stay on the
    /// remote. Decided by the merge of step 3 on the local tree as it is now (`plan` checks the
    /// merge on the tree as it is then); `run` asks only when something would be fetched, since
    /// the merge walks both trees.
    private func leftOut(_ remoteEntries: [SyncEntry], withdrawn: Set<UInt16>, baseless: Bool) throws -> Set<UInt64> {
        let view = try vault.localSyncView(deviceName: deviceName)
        return SyncTrees(local: view.entries, remote: remoteEntries).leftOut(base: baseless ? nil : view.base, withdrawn: withdrawn,
                                                                             context: TreeMerge.Context(view, time: now()))
    }

    /// `groupsListed`: a page level, whose groups a join brings whole from the remote's listing.
    private func download(_ names: [String], _ remoteVault: RemoteVault, _ summary: inout SyncSummary,
                          _ filesMoved: ((SyncProgress) -> Void)?, groupsListed: Set<String>? = nil) throws {
        var download = SyncDownload(vault: vault, remote: remote, remoteVault: remoteVault, storageFolder: storageFolder,
                                    downloadFile: downloadFile)
        download.groupsListed = groupsListed
        summary.filesDown += try download.run(names, filesMoved: filesMoved)
    }
}
