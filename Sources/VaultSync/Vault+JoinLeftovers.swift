import VaultCore

extension Vault {
    /// A step of a sync that may place files; when it fails on the remote's account (a remote
    /// gone, a file missing or damaged there) and this device was joining, the files the join
    /// placed go, so that the next sync joins again (a file at a name a join writes refuses it,
    /// FORMAT.md §13.12). A process killed here leaves them: that next sync is refused.
    func removingJoinLeftovers<R>(_ remote: RemoteVault, _ body: () throws -> R) throws -> R {
        do { return try body() } catch let error where error is RemoteError || error is SyncRefusal {
            // The failure is what the user must hear; one of this removal leaves the files,
            // which the next sync's refusal then names.
            try? removeJoinLeftovers(remote)
            throw error
        }
    }
}
