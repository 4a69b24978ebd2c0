import VaultFormat

/// The calls a mounted vault's sync makes (docs/SYNC-DESIGN.md §3.6): the same state the file
/// system serves, no second open of the storage. Downloads and uploads happen between these
/// calls, outside the vault's lock; `commitLive` takes it once for the merge and its commit.
extension Vault {
    /// Never committed: a sync may make it join the remote's vault.
    public var isNewVault: Bool { state.withLock { $0.isNew } }

    /// The other devices' files the remote's items may bring in, to download before `commitLive`;
    /// but for the items `leavingOut`, whose content the merge will not take (FORMAT.md §14.8,
    /// "What the withdrawn wrote before this sync").
    public func remoteFilesToFetch(_ remote: RemoteVault, leavingOut: Set<UInt64> = []) throws -> [String] {
        try liveLocked { try $0.remoteFilesToFetch(remote, leavingOut: leavingOut) }
    }

    /// Each fetched file opens under its key in the remote's records (a file a provider
    /// changed stops the sync before anything changes here).
    public func checkFetched(_ remote: RemoteVault, names: [String]) throws {
        try liveLocked { try $0.checkFetched(remote, names: names) }
    }

    /// Commits pending changes, then, once no chunk is being written behind, lets `plan`
    /// decide on the local view and carries it out (merge, commit with the sync base) under
    /// one hold of the lock. Nil when `plan` finds nothing to do. `known`: the sync base the
    /// round read already (`recordedSyncBase`), not read again while the root still records it.
    public func commitLive(_ remote: RemoteVault, deviceName: String, remoteNames: Set<String>, known: RecordedSyncBase? = nil,
                           plan: (LocalSyncView) throws -> LiveSyncPlan?) throws -> LiveSyncCommit? {
        while true {
            writeBehind.waitUntilIdle()
            let done: LiveSyncCommit?? = try liveLocked { state in
                guard !state.writingBehind else { return .none }
                return .some(try state.commitLive(remote, deviceName: deviceName, remoteNames: remoteNames, known: known, plan: plan))
            }
            if let done { return done }
        }
    }

    private func liveLocked<R>(_ body: (inout VaultState) throws -> R) throws -> R {
        try state.withLock { state in
            guard !state.isLocked else { throw VaultError.locked }
            do { try state.readWholeVault(); return try body(&state) } catch let refusal as SyncRefusal { throw refusal } catch {
                throw VaultError.wrap(error)
            }
        }
    }
}
