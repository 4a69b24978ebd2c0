import VaultCore
import VaultFormat

/// A remote that does not hold the state this device last synced with (docs/SYNC-DESIGN.md §3.4
/// step 3): a provider's restore or a backup copied over it, maybe synced since by a device that
/// never saw what was lost. A merge with it would take everything written since as deleted
/// there, so `dotsafe sync` and a mount's round refuse before anything changes on either side.
/// What a device can tell from its sync base and the remote root (FORMAT.md §13.4, §13.11):
/// - the remote's generation is below the one the base was read at;
/// - the base is this device's own root, known to be up, and the remote holds that generation
///   written by another device;
/// - an item of the base has an ID that its maker's entry in the remote's device table had not
///   handed out yet: only a device raises its own counter, and every root copies the entries of
///   the root it came from, so along the remote's history each counter only grows.
/// Not told: a remote put back and then synced past this device's generation by others, when
/// nothing was made between the copy and this device's last sync (only changed, moved or
/// deleted); the format holds nothing else that tells (SYNC-DESIGN §3.4 says what would).
enum RemoteRollback {
    static func refusal(header: SyncBase.Header?, base: SyncBase?, localDevice: UInt16, remote: RemoteVault) -> SyncRefusal? {
        guard let header else { return nil }
        let generation = remote.generation
        if generation == 0 && !remote.hasRecord && header.readGeneration > 0 { return .otherRemote }
        if generation < header.readGeneration {
            return .rolledBack("it holds generation \(generation), older than generation \(header.readGeneration) this device synced with")
        }
        if generation > 0, header.publishedGeneration == header.readGeneration, generation == header.readGeneration,
           remote.writerDevice != localDevice {
            return .rolledBack("it holds generation \(generation) written by another device, not the generation \(generation) this "
                               + "device wrote and synced with")
        }
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
