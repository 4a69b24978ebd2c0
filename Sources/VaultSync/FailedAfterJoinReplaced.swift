/// A sync that failed (or was stopped) after its join replaced files here (`replacesPartialJoin`,
/// docs/FORMAT.md §13.12 "Replacing a partial join"): those files keep the remote's bytes, so
/// the failure alone, whose line may end "nothing was changed", would not be true. Thrown by
/// `VaultSynchronizer.run` and `MountedSynchronizer.run` in place of that failure.
public struct FailedAfterJoinReplaced: Error, CustomStringConvertible {
    /// What the sync failed with.
    public let failure: any Error
    /// How many files of this storage the join replaced (more than none).
    public let replaced: Int

    public var description: String { Self.failure("\(failure)", replaced: replaced) }

    /// What stays of a join that replaced `count` files.
    public static func stays(_ count: Int) -> String {
        "the join replaced \(count) file\(count == 1 ? "" : "s") of this storage with the remote's bytes, which they keep: a state "
            + "of this vault under another pattern in this storage may read the items in them as damaged"
    }

    /// `reason` (a failure's description) with what stays in place of its "nothing was changed".
    public static func failure(_ reason: String, replaced count: Int) -> String {
        guard count > 0 else { return reason }
        var reason = reason
        for ending in ["; nothing was changed", ": nothing was changed"] where reason.hasSuffix(ending) {
            reason.removeLast(ending.count)
        }
        return reason + "; " + stays(count)
    }
}
