import VaultSync

/// A mount's round that failed after its join replaced `replaced` files: `failure` as it was,
/// told with what stays (`MountSync.describe`).
struct ReplacedThenFailed: Error, CustomStringConvertible {
    let failure: any Error
    let replaced: Int

    var description: String { FailedAfterJoinReplaced.failure(MountSync.describe(failure), replaced: replaced) }
}
