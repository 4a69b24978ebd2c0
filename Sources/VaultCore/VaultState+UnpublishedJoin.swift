import VaultFormat

/// A device whose join committed here but whose root never went up (docs/FORMAT.md §13.12, "A
/// join committed, never published"): no remote root lists it, and once another device wrote
/// since, the next sync takes its entry in at the end of the remote's table instead of refusing
/// it as a device another sync replaced. So too every device the remote's table lacks, on a
/// remote the user says replaces the old one.
extension VaultState {
    /// Whether the remote root lists this device as it knows itself, or takes it in
    /// (`remote.takesInDevice`).
    func remoteListsThisDevice(_ remote: RemoteVault) -> Bool {
        guard let root = remote.root, let own = committer.formatTwo else { return false }
        let local = Int(own.localDevice)
        return local < root.devices.count ? root.devices[local].deviceID == own.deviceID : remote.takesInDevice
    }

    /// The three conditions of §13.12: the base unconfirmed, none of its items this device's
    /// own (so that nothing of its own can be taken as deleted there), and the remote's table
    /// the local one up to this device's index, by device ID (the same vault), and no longer.
    func takesInUnpublishedDevice(_ remote: RemoteVault) throws -> Bool {
        guard !remote.joins, !isNew, let root = remote.root, let own = committer.formatTwo else { return false }
        let local = Int(own.localDevice)
        guard zip(root.devices, own.devices).allSatisfy({ $0.deviceID == $1.deviceID }) else { return false }
        // A remote that replaces the one the vault synced with (`replacesRemote`) may lack the
        // devices that the device moving it first never learnt of, this one among them: they
        // come in at their indexes, which never change (SYNC-DESIGN §3.4 "Moving to a new remote").
        if remote.replacesRemote { return own.devices.count > root.devices.count }
        guard root.devices.count == local, own.devices.count > local else { return false }
        guard let recorded = try recordedSyncBase(), let base = recorded.base,
              recorded.header.publishedGeneration == recorded.header.readGeneration + 1 else { return false }
        return !base.items.contains { UInt32(truncatingIfNeeded: $0.id >> 32) == own.itemPrefix }
    }
}
