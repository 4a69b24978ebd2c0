import VaultCore
import VaultFormat

/// A remote that does not hold the state this device last synced with (docs/SYNC-DESIGN.md §3.4
/// step 3): a provider's restore or a backup copied over it, maybe synced since by a device that
/// never saw what was lost. A merge with it would take everything written since as deleted
/// there, so `dotsafe sync` and a mount's round refuse before anything changes on either side.
/// What a device can tell from its sync base and the remote root (FORMAT.md §13.4, §13.11):
/// - the remote's generation is below the one the base was read at;
/// - an item of the base has an ID that its maker's entry in the remote's device table had not
///   handed out yet: only a device raises its own counter, and every root copies the entries of
///   the root it came from, so along the remote's history each counter only grows.
/// Not told: a remote put back and then synced past this device's generation by others, when
/// nothing was made between the copy and this device's last sync (only changed, moved or
/// deleted); the format holds nothing else that tells (SYNC-DESIGN §3.4 says what would).
enum RemoteRollback {
    /// Said once by a sync or a mount's round that merges without a base for `replacedOwnRoot`.
    static let replacedRootWarning = "another device's sync replaced this device's last root at the same moment: merged without a "
        + "common state, so files deleted since may come back and files changed on one side appear as conflict copies"

    /// Said by `sync --new-remote` that merges with a remote holding another state of the vault.
    static let newRemoteWarning = "this remote holds another state of this vault than this device synced with: merged without a "
        + "common state, so files deleted since may come back and files changed on both sides appear as conflict copies"

    /// The base is this device's own root, known to be up, and the remote holds that generation
    /// written by another device: a device that read the same root raced this one's publish
    /// (rclone has no compare-and-swap) and its slower writes landed after this one's read-back
    /// (SYNC-DESIGN §3.4 step 7). Its root comes from the tree this device read, not from the
    /// base, so a merge against the base would take this device's changes as deleted there: the
    /// sync merges without a base (nothing is taken as deleted). A put-back remote that shows
    /// the same signature merges so too, and loses nothing either.
    static func replacedOwnRoot(header: SyncBase.Header?, localDevice: UInt16, remote: RemoteVault) -> Bool {
        guard let header, remote.generation > 0 else { return false }
        return header.publishedGeneration == header.readGeneration && remote.generation == header.readGeneration
            && remote.writerDevice != localDevice
    }

    static func refusal(header: SyncBase.Header?, base: SyncBase?, localDevice: UInt16, remote: RemoteVault) -> SyncRefusal? {
        guard let header else { return nil }
        let generation = remote.generation
        if generation == 0 && !remote.hasRecord && header.readGeneration > 0 { return .otherRemote }
        if generation < header.readGeneration {
            return .rolledBack("it holds generation \(generation), older than generation \(header.readGeneration) this device synced with")
        }
        // The item check below would count this device's items made since the tree the racing
        // root comes from: that merge takes none of them as deleted.
        if replacedOwnRoot(header: header, localDevice: localDevice, remote: remote) { return nil }
        guard let base, generation > 0 else { return nil }
        let counters = Dictionary(remote.itemCounters.map { ($0.prefix, $0.next) }, uniquingKeysWith: max)
        let unmade = base.items.contains { item in
            counters[UInt32(truncatingIfNeeded: item.id >> 32)].map { UInt32(truncatingIfNeeded: item.id) >= $0 } ?? false
        }
        guard unmade else { return nil }
        return .rolledBack("it lacks items this device synced with at generation \(header.readGeneration), which the remote's devices "
                           + "had not made yet")
    }
}
