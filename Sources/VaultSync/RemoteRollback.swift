import VaultCore
import VaultFormat

/// A remote that does not hold the state this device last synced with (docs/SYNC-DESIGN.md §3.4
/// step 3): a provider's restore or a backup copied over it. A merge with it would take
/// everything written since as deleted there, so `dotsafe sync` and a mount's round refuse before
/// anything changes on either side: the remote's generation is below the one the base was read at.
enum RemoteRollback {
    static func refusal(header: SyncBase.Header?, base: SyncBase?, localDevice: UInt16, remote: RemoteVault) -> SyncRefusal? {
        guard let header else { return nil }
        let generation = remote.generation
        if generation < header.readGeneration {
            return .rolledBack("it holds generation \(generation), older than generation \(header.readGeneration) this device synced with")
        }
        return nil
    }
}
