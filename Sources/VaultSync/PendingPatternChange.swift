import VaultCore

/// A pattern change made on this device that the remote has not followed yet (FORMAT.md §13.12,
/// "with sync"), from the root's tags 2 and 4 and the remote's listing. `dotsafe sync`
/// (`VaultSynchronizer`) and a mount's rounds (`MountedSynchronizer`) carry it the same way: the
/// remote root is read at the former pattern's slots until the new record is up, the sync
/// publishes even with nothing to merge, and once the new record is up the former record and
/// names go, and only then does the local root stop naming them.
struct PendingPatternChange {
    /// The former pattern's remote record name, kept by the root (tag 2); nil: no change to carry.
    let formerName: String?
    /// The remote lists that record.
    let formerPresent: Bool
    /// After a move of an upgraded vault's names (tag 4): the files of the old names that the
    /// remote lists; nil: no move to carry.
    let formerFiles: [String]?

    init(_ vault: Vault, listed: Set<String>) throws {
        formerName = try vault.formerRemoteUnlockName()
        formerPresent = formerName.map(listed.contains) ?? false
        formerFiles = try vault.formerRemoteFiles(listed: listed)
    }

    /// The new pattern synced into the storage of a device that had the old one, after device 0
    /// changed it and synced (FORMAT.md §13.12, "Another device follows the change"): before the
    /// sync looks at the local state, that state is taken under the new pattern, and the sync
    /// then merges and publishes it as any other. Anything else that is not a state to follow
    /// goes on as a join, which refuses it as before. `step` is the synchronizers' crash injection.
    static func follow(_ vault: Vault, unlockFile: [UInt8]?, on remote: RemoteStorage, listed: Set<String>,
                       step: ((String) throws -> Void)?) throws {
        guard let unlockFile, vault.isNew, !vault.isShared else { return }
        _ = try vault.followPatternChange(unlockFile: unlockFile, remoteSlots: { try remote.read($0, listed: listed) },
                                          step: { try step?("follow \($0)") })
    }

    /// Refuses a sync that finds the vault on the remote under another pattern: no record of
    /// this pattern nor a former one, but the vault's slots, or (after a move of its names) this
    /// device's own files. Own files of a device that never saw the vault there (`sawRemote`
    /// false: its base read no remote generation) are a first sync cut short.
    func refuseIfChangedElsewhere(_ vault: Vault, _ remoteVault: RemoteVault, listed: Set<String>,
                                  sawRemote: () throws -> Bool) throws {
        guard !remoteVault.hasRecord && !formerPresent else { return }
        if try remoteVault.slotNames().contains(where: listed.contains)
            || (!vault.isShared && sawRemote() && vault.ownFilesListed(listed)) {
            throw SyncRefusal.patternChanged
        }
    }

    /// The remote root is read: at the record's slots, or at the former pattern's until the new
    /// record is up (the vault's own keys open it).
    func readsRoot(_ remoteVault: RemoteVault) -> Bool { remoteVault.hasRecord || formerPresent }

    /// The sync publishes even with nothing to merge: the new pattern's record goes up.
    func forcesPublish(_ remoteVault: RemoteVault) -> Bool { formerPresent && !remoteVault.hasRecord }

    /// The new pattern's record goes up before the root; after a move of the names only after
    /// the root and its copy, since its RL names the new slots.
    var recordFirst: Bool { formerFiles == nil }

    /// Once the new pattern's record is on the remote (read, or written by this sync: `published`):
    /// the old names a move left and the former record go, and only then does the local root
    /// stop naming them. Cut anywhere, the next sync does what is left. `beforeChange` is the
    /// synchronizers' crash injection.
    func finish(_ vault: Vault, _ remoteVault: RemoteVault, published: Bool, on remote: RemoteStorage,
                beforeChange: ((String) throws -> Void)?, summary: inout SyncSummary) throws {
        guard let formerName, formerFiles == nil || remoteVault.hasRecord || published else { return }
        if let formerFiles, !formerFiles.isEmpty {
            try beforeChange?("former names")
            try remote.delete(formerFiles)
            summary.filesRemoved += formerFiles.count
        }
        if formerPresent {
            try beforeChange?("former record")
            try remote.delete([formerName])
            summary.filesRemoved += 1
        }
        try beforeChange?("forget")
        try vault.forgetFormerRemoteUnlock()
    }
}
