import VaultCore
import VaultFormat

/// What a sync does, decided from this device's sync base and the remote root it read
/// (FORMAT.md §13.11), the same for `dotsafe sync` and a mount's rounds. The base is a state
/// the remote is known to hold: the remote root this device's last sync read while that
/// sync's own root was not known to be up (`pending`), else that own root.
struct SyncDecision: Equatable {
    /// The remote moved past the base: merge.
    var merges: Bool
    /// The remote does not hold this device's state: publish it.
    var publishes: Bool
    /// Nothing to send, but the remote holds the root of this device's last sync, which was
    /// cut before it learnt so: the base moves to that root.
    var confirmsLanded: Bool
    /// Nothing to send, and the remote holds this device's root, known to be up: read back, so
    /// the pins kept for the root the sync before read may go (`Vault.releaseReadRootPins`).
    var readsOwnRootBack: Bool

    init(view: LocalSyncView, remoteGeneration read: UInt64, remoteWriter: UInt16?) {
        let header = view.header
        let ownRoot = header.map { read == $0.publishedGeneration && remoteWriter == view.localDevice } ?? false
        let pending = header.map { $0.publishedGeneration != $0.readGeneration } ?? false
        let atBase = read == 0 || ownRoot || (pending && read == header?.readGeneration)
        let localUnchanged = !view.hasChanges && header.map { view.generation == $0.localGeneration } ?? false
        merges = !atBase
        publishes = !(ownRoot && localUnchanged)
        confirmsLanded = ownRoot && localUnchanged && pending
        readsOwnRootBack = ownRoot && localUnchanged && !pending
    }
}
