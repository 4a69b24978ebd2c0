import Foundation
import VaultCore
import VaultFormat

/// `dotsafe sync`: one vault brought to one state in its local storage and on a remote
/// (docs/SYNC-DESIGN.md §3.4, FORMAT.md §13.11). Files move only by explicit lists through
/// `RemoteStorage`; blocks go up before the pages that reference them, pages before the root,
/// and the remote root goes into slot (g + 1) mod 2 before its copy. The local vault is
/// committed (step 5) before anything goes up, so a sync cut short anywhere leaves both sides
/// opening to a consistent state, and the next sync completes it; that commit keeps the
/// remote's tree as read for its base until its root is up (`SyncDecision`).
public struct VaultSynchronizer {
    public let vault: Vault
    public let remote: RemoteStorage
    /// The local storage folder: downloads land in a folder in it (FORMAT.md §13.11), uploads
    /// leave from it.
    public let storageFolder: String
    /// This device's name in conflict names (kept in the vault's device table when it joins).
    public let deviceName: String
    /// Unix seconds: the time in conflict names.
    public var now: () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    /// Called at each step with its number and the number of steps (a terminal shows it).
    public var progress: ((_ step: Int, _ steps: Int) -> Void)?
    /// Called as each batch of files moves (a terminal shows it).
    public var filesMoved: ((SyncProgress) -> Void)?
    /// The remote's listing, begun by the caller beside its key derivation; nil: step 1 lists.
    public var listing: (() throws -> RemoteListing)?
    /// Called once nothing local is read or written any more (the root is up and the base that
    /// names it committed), only the remote's removals to go: the caller may lock the vault
    /// meanwhile (its re-creation overlaps them). Not called when the sync must still commit
    /// here (a pattern change's former record, a withdrawal's retired slots).
    public var localDone: (() -> Void)?
    /// The user says this storage holds no other state of this vault (`--replace-partial-join`):
    /// a join replaces what a join of it cut short left where the remote changed it since
    /// (`RemoteVault.replacesPartialJoin`, FORMAT.md §13.12).
    public var replacesPartialJoin = false
    /// The user says this remote replaces the one the vault synced with (`--new-remote`,
    /// docs/SYNC-DESIGN.md §3.4 "Moving to a new remote"): where a plain sync is refused as
    /// another remote or a rolled-back one, this one takes the remote as it is. With no root of
    /// the vault there, the whole vault goes up; else the two merge without a base (nothing is
    /// taken as deleted). Elsewhere it changes nothing.
    public var replacesRemote = false

    static let steps = 6
    /// Called before each change to the remote and before the last local commit; a test throws
    /// from it to stop the sync there, as a process that died would (crash injection).
    var beforeChange: ((_ change: String) throws -> Void)?
    /// A test's stand-in for rclone's batch download (`SyncDownload.downloadFile`): a partial
    /// file, then a throw, is a process killed in that write.
    var downloadFile: ((_ name: String, _ path: String?) throws -> Void)?

    public init(vault: Vault, remote: RemoteStorage, storageFolder: String, deviceName: String) {
        self.vault = vault
        self.remote = remote
        self.storageFolder = storageFolder
        self.deviceName = deviceName
    }

    /// A run that throws leaves the storage at its last commit, but may leave its merge in the
    /// vault's memory, uncommitted (its files missing or damaged): the caller discards the vault
    /// (`Vault.discard`, as `dotsafe sync` does) and opens it again before using it.
    public func run() throws -> SyncSummary {
        var opened: RemoteVault?
        do { return try run(opening: &opened) } catch {
            guard let replaced = opened?.joinReplaced.count, replaced > 0 else { throw error }
            throw FailedAfterJoinReplaced(failure: error, replaced: replaced)
        }
    }

    /// The sync's steps; `opened`: the remote's vault once opened, for what its join replaced.
    private func run(opening opened: inout RemoteVault?) throws -> SyncSummary {
        var summary = SyncSummary()
        step(1)
        let listing = try self.listing?() ?? remote.list()
        var remoteNames = Set(listing.storageFiles)
        let unlockName = try vault.remoteUnlockName()
        let unlockFile = try remoteNames.contains(unlockName) ? remote.read(unlockName) : nil
        // The pattern was changed on another device: this storage's state follows it first.
        try PendingPatternChange.follow(vault, unlockFile: unlockFile, on: remote, listed: remoteNames, step: beforeChange)
        let view = try vault.localSyncView(deviceName: deviceName)
        try vault.beginDownloads()
        if view.isNew && unlockFile == nil { throw vault.isShared ? SharingError.noGrantOnRemote : SyncRefusal.noVault }
        // A grantee cannot write the remote's record: the owner moves the vault, then it merges.
        if replacesRemote && vault.isShared && unlockFile == nil { throw SharingError.sharedVaultNotOnRemote }
        let remoteVault = try vault.openRemote(unlockFile: unlockFile)
        opened = remoteVault
        remoteVault.replacesPartialJoin = replacesPartialJoin
        remoteVault.replacesRemote = replacesRemote
        // After a pattern change here the remote still holds the former pattern's record, or
        // (after a move of an upgraded vault's names) its names (FORMAT.md §13.12).
        let change = try PendingPatternChange(vault, listed: remoteNames)
        // (`publishedGeneration` is what a pending base means to publish: read only counts.)
        try change.refuseIfChangedElsewhere(vault, remoteVault, listed: remoteNames) { (view.header?.readGeneration ?? 0) > 0 }
        step(2)
        if change.readsRoot(remoteVault) {
            let slots = try remote.read(remoteVault.rootSlotNames(), listed: remoteNames)
            try vault.readRemoteRoot(remoteVault, slotFiles: slots)
        }
        // A remote put back to an older state: refused before anything changes (`RemoteRollback`).
        let refusal = RemoteRollback.refusal(header: view.header, base: view.base, localDevice: view.localDevice, remote: remoteVault)
        if let refusal, !replacesRemote { throw refusal }
        if refusal != nil && vault.isShared && remoteVault.generation == 0 { throw SharingError.sharedVaultNotOnRemote }
        // Another device's root replaced this one's after its read-back, or the user took a
        // remote that holds another state of the vault: merged without a base.
        let moved = refusal != nil && remoteVault.generation > 0
        let baseless = moved ? RemoteRollback.newRemoteWarning
            : RemoteRollback.replacedOwnRoot(header: view.header, localDevice: view.localDevice, remote: remoteVault)
            ? RemoteRollback.replacedRootWarning : nil
        // A follow's slots take free files chosen before the downloads (FORMAT.md §14.8).
        try vault.prepareFollow(remoteVault)
        if view.isNew && remoteVault.generation == 0 { throw SyncRefusal.noVault }
        var remoteEntries: [SyncEntry] = [], pages: Set<String> = []
        if remoteVault.generation > 0 {
            remoteEntries = try vault.removingJoinLeftovers(remoteVault) {
                try vault.fetchRemotePages(remoteVault) {
                    try download($0, remoteVault, &summary, groupsListed: remoteNames)
                    pages.formUnion($0)
                }
                return try vault.loadRemoteTree(remoteVault)
            }
            // A grant a sync cut after its merge's commit left out (FORMAT.md §14.9).
            try download(try vault.missingGrants(remoteVault), remoteVault, &summary)
        }
        step(3)
        var decision = SyncDecision(view: view, remoteGeneration: remoteVault.generation, remoteWriter: remoteVault.writerDevice)
        if moved { (decision.merges, decision.publishes) = (true, true) }
        let read = remoteVault.generation
        // A grantee following a withdrawal takes the new keys in the merge (FORMAT.md §14.8).
        if decision.merges || remoteVault.follows {
            try vault.removingJoinLeftovers(remoteVault) {
                try merge(view, remoteEntries, remoteVault, baseless: baseless, pagesFetched: pages, &summary)
            }
        }
        step(4)
        // A sync cut short after its local commit (step 5) left the remote without its root:
        // publish again, though nothing changed here since; and after a pattern change here.
        // A root slot or the record of this vault torn on the remote (a sync killed while it
        // went up) would stay so with nothing to publish: the root and record go up again.
        // A first publish (or a move's) killed between its root and the copy left one slot: a
        // count off a multiple of 16 there, which only a root written again puts right.
        let slots = try remoteVault.rootSlotNames()
        let torn = remoteVault.generation > 0
            && (listing.holdsTorn(slots + [unlockName]) || UInt64(slots.count) == Format.indexSlotCount && !slots.allSatisfy(remoteNames.contains))
        let forced = change.forcesPublish(remoteVault) || remoteVault.rotated || torn
        let merged = decision.merges || remoteVault.follows
        // §3.3: nothing goes up when the remote root is the state's already (a commit here that
        // changed nothing there; after a merge, checked on its commit, which the local side needs).
        var publishes = decision.publishes || forced
        if publishes && !forced && !merged, try vault.remoteHoldsState(remoteVault) { publishes = false }
        if publishes {
            try vault.commitSync(remoteVault)
            if merged && !forced, try vault.remoteHoldsCommittedState(remoteVault) { publishes = false }
        } else if decision.confirmsLanded {
            try vault.confirmLandedSync(generation: read)
        } else if decision.readsOwnRootBack {
            try vault.releaseReadRootPins(remoteVault)
        }
        try vault.endDownloads()
        step(5)
        let transfer = try vault.syncTransfer(remoteVault, remoteNames: remoteNames, publishing: publishes)
        // The owner's sync after a withdrawal (FORMAT.md §14.8): the remote moves to the new keys.
        let movesRemote = remoteVault.movesRemote
        try beforeChange?("upload")
        // After a move of the names here (no record first), the grants name RL''s slots: after the root.
        try transfer.uploadBeforeRoot(to: remote, from: storageFolder, grantsAfterRoot: movesRemote || !change.recordFirst,
                                      filesMoved: filesMoved, summary: &summary)
        remoteNames.formUnion(transfer.upload)
        if publishes {
            // §3.4 step 7: rclone has no compare-and-swap; a root written meanwhile is not
            // overwritten here (a race in the same instant still can be, FORMAT.md §13.11).
            let files = try remote.read(remoteVault.rootSlotNames())
            guard try vault.remoteGeneration(remoteVault, slotFiles: files) == read else { throw SyncRefusal.raced }
            let checked = ContinuousClock.now
            // A first publish, or a record without the identity or recipients of this device's.
            let record = remoteVault.hasRecord && !remoteVault.recordOutdated ? nil : try vault.remoteUnlockFile()
            let roots = try vault.remoteRootFiles(generation: read + 1)
            let recordFirst = change.recordFirst
            if let record, recordFirst {
                try beforeChange?("record")
                try remote.writeContended(unlockName, contents: record)
                summary.filesUp += 1
            }
            for (name, file) in roots {
                try beforeChange?("root")
                try remote.writeContended(name, contents: file)
                summary.filesUp += 1
            }
            // A device that checked the slots just before these writes may write its root over
            // them (`stillHolds`): then this root is not known to be up, and the base stays the
            // tree read, from which every root there comes (the next sync merges with it).
            guard try remote.stillHolds(roots, settle: ContinuousClock.now - checked) else { throw SyncRefusal.raced }
            if !recordFirst && !movesRemote { try transfer.uploadGrants(to: remote, from: storageFolder, beforeChange: beforeChange) }
            if let record, !recordFirst {
                try beforeChange?("record")
                try remote.writeContended(unlockName, contents: record)
                summary.filesUp += 1
            }
            if movesRemote {
                try transfer.finishMove(to: remote, from: storageFolder, unlockName: unlockName, record: { try vault.remoteUnlockFile() },
                                        beforeChange: beforeChange, summary: &summary)
            }
            // Only now is the committed state one the remote holds: the next merge's base.
            try vault.syncBasePublished()
        }
        // The remote's record names the new keys (written above, or by a sync cut short after
        // it): the slots of the old ones go below, then the owner's record stops naming them.
        let retired = try vault.rotatedRemoteSlotNames()
        // Unless a withdrawal or a pattern change is still to be forgotten here, the vault is not
        // touched after this (the base above is its last commit): its lock may run while the
        // remote's removals go.
        if change.formerName == nil && retired.isEmpty { localDone?() }
        step(6)
        try beforeChange?("remove")
        try remote.delete(transfer.remove)
        summary.filesRemoved = transfer.remove.count
        if !retired.isEmpty {
            try beforeChange?("retire")
            let present = retired.filter(remoteNames.contains)
            try remote.delete(present)
            summary.filesRemoved += present.count
            try beforeChange?("forget rotation")
            try vault.forgetRotation()
        }
        try change.finish(vault, remoteVault, published: publishes, on: remote, beforeChange: beforeChange, summary: &summary)
        return summary
    }

    /// Steps 3–4 of §3.4: the three-way merge, the other devices' files it needs, checked;
    /// `baseless`: without the base, saying this warning (`RemoteRollback`). `pagesFetched`:
    /// the remote root's pages step 2 brought, read under their keys since: the merged state
    /// builds on those pages, which do not come down again (a staged one, `Vault.stage`,
    /// never does; its commit puts it in place).
    private func merge(_ view: LocalSyncView, _ remoteEntries: [SyncEntry], _ remoteVault: RemoteVault, baseless: String?,
                       pagesFetched: Set<String>, _ summary: inout SyncSummary) throws {
        let trees = SyncTrees(local: view.entries, remote: remoteEntries)
        let result = trees.merge(base: baseless == nil ? view.base : nil, withdrawn: try vault.withdrawnDevices(remoteVault),
                                 context: TreeMerge.Context(view, time: now()))
        if let baseless { summary.warnings.append(baseless) }
        summary.actions = result.actions
        summary.conflicts = result.actions.filter {
            switch $0 {
            case .keptBothVersions, .renamed: true
            default: false
            }
        }.count
        let wanted = try vault.applyMerge(remoteVault, merged: trees.mergedItems(result.tree), nextItemID: result.nextItemID,
                                          deviceName: deviceName)
        try download(wanted.filter { !pagesFetched.contains($0) }, remoteVault, &summary)
        try vault.finishMerge(remoteVault, downloaded: wanted)
    }

    /// The files come down as `SyncDownload` says (staged over names the last commit references;
    /// `groupsListed`: a page level, whose groups a join brings whole from the remote's listing).
    private func download(_ names: [String], _ remoteVault: RemoteVault, _ summary: inout SyncSummary,
                          groupsListed: Set<String>? = nil) throws {
        var download = SyncDownload(vault: vault, remote: remote, remoteVault: remoteVault, storageFolder: storageFolder,
                                    downloadFile: downloadFile)
        download.groupsListed = groupsListed
        summary.filesDown += try download.run(names, filesMoved: filesMoved)
    }

    private func step(_ number: Int) { progress?(number, Self.steps) }
}

/// What a sync moved, for its one line of output.
public struct SyncSummary: Equatable, Sendable {
    public var filesUp = 0
    public var filesDown = 0
    public var filesRemoved = 0
    public var conflicts = 0
    /// Among the files up: chunks and packs, and index pages (R-SYN-6 counts them).
    public var blocksUp = 0
    public var pagesUp = 0
    /// Among the files up: the rest of own groups the remote lacked (new groups go up whole).
    public var groupFilesUp = 0
    /// What the merge decided beyond taking each side's change (conflicts among them).
    public var actions: [MergeAction] = []
    /// Lines for the user beside the summary (standard error, a mount's log).
    public var warnings: [String] = []

    public init() {}

    /// `synced: 3 files up (786 KB), 0 down, 0 removed, 0 conflicts`: every file is one size.
    public var line: String {
        "synced: \(filesUp) files up (\(Self.bytes(filesUp))), \(filesDown) down (\(Self.bytes(filesDown))), "
            + "\(filesRemoved) removed on the remote, \(conflicts) conflict\(conflicts == 1 ? "" : "s")"
    }

    static func bytes(_ files: Int) -> String {
        let bytes = Double(files * Format.fileSize)
        if bytes < 1_000_000 { return "\(Int((bytes / 1000).rounded())) kB" }
        return String(format: "%.1f MB", bytes / 1_000_000)
    }
}
