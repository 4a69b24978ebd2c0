/// What a sync whose join replaced files here (`--replace-partial-join`) says of them when it
/// fails or is stopped (docs/FORMAT.md §13.12 "Replacing a partial join"): they keep the
/// remote's bytes, where a failure's line would say that nothing was changed.
enum ReplacedByJoin {
    /// What stays of a join that replaced `count` files (more than none).
    static func stays(_ count: Int) -> String {
        "the join replaced \(count) file\(count == 1 ? "" : "s") of this storage with the remote's bytes, which they keep: a state "
            + "of this vault under another pattern in this storage may read the items in them as damaged"
    }

    /// `reason` (a failure's description) with what stays in place of its "nothing was changed".
    static func failure(_ reason: String, replaced count: Int) -> String {
        guard count > 0 else { return reason }
        var reason = reason
        for ending in ["; nothing was changed", ": nothing was changed"] where reason.hasSuffix(ending) {
            reason.removeLast(ending.count)
        }
        return reason + "; " + stays(count)
    }
}

/// A mount's round that failed after its join replaced `replaced` files: `failure` as it was,
/// told with what stays (`MountSync.describe`).
struct ReplacedThenFailed: Error, CustomStringConvertible {
    let failure: any Error
    let replaced: Int

    var description: String { ReplacedByJoin.failure(MountSync.describe(failure), replaced: replaced) }
}
