import VaultCore

/// The order in which a sync's files go up (FORMAT.md §13.11, §14.8), one place for
/// `VaultSynchronizer` and `MountedSynchronizer`.
extension SyncTransfer {
    /// What goes up before the remote root: all of it, or for the owner's sync after a withdrawal
    /// or after a move of an upgraded vault's names (`grantsAfterRoot`) all but the grants, which
    /// are sealed to the new keys or root locator and go up after the root under them
    /// (`finishMove`, `uploadGrants`), so that a grantee never finds one naming no root.
    func uploadBeforeRoot(to remote: RemoteStorage, from folder: String, grantsAfterRoot: Bool,
                          filesMoved: ((SyncProgress) -> Void)?, summary: inout SyncSummary) throws {
        let files = grantsAfterRoot ? blocks + groupFiles + pages : upload
        try remote.upload(files, from: folder, filesDone: SyncProgress.batch(.up, total: files.count, to: filesMoved))
        summary.filesUp += upload.count
        summary.blocksUp = blocks.count
        summary.pagesUp = pages.count
        summary.groupFilesUp = groupFiles.count
    }

    /// The owner's sync after a withdrawal, once the root under the new keys is up: the grants,
    /// then the remote's record (`record`), the commit point of the remote's move. Until the
    /// record is written the remote opens with the old keys, and the next sync does this again.
    /// `beforeChange` is the crash injection of `VaultSynchronizer`.
    func finishMove(to remote: RemoteStorage, from folder: String, unlockName: String, record: () throws -> [UInt8],
                    beforeChange: ((String) throws -> Void)? = nil, summary: inout SyncSummary) throws {
        try beforeChange?("grants")
        try remote.upload(grants, from: folder)
        try beforeChange?("record")
        try remote.write(unlockName, contents: try record())
        summary.filesUp += 1
    }

    /// The sync of a move of an upgraded vault's names (FORMAT.md §13.12), once its root is up
    /// at RL''s slots: the grants, sealed again to RL', before the new pattern's record.
    func uploadGrants(to remote: RemoteStorage, from folder: String, beforeChange: ((String) throws -> Void)?) throws {
        guard !grants.isEmpty else { return }
        try beforeChange?("grants")
        try remote.upload(grants, from: folder)
    }
}
