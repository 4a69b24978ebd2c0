import VaultFormat

/// Whose changes the owner's sync after a withdrawal leaves out (docs/FORMAT.md §14.8, "Sync
/// after a withdrawal"): until that sync the remote is under the keys the withdrawn people still
/// hold. A grantee's device ID is bound to the pair (§14.9), so the owner, holding the identity
/// and every recipient's key, tells their devices in the table without any new field.
extension VaultState {
    /// The indexes of the remote table's devices that people whose grants this vault ended
    /// joined with; empty unless this sync moves the remote and read the root at the old keys
    /// (a root at the new keys is this device's own, written past only by kept people).
    func withdrawnDevices(_ remote: RemoteVault) throws -> Set<UInt16> {
        guard remote.movesRemote, !remote.readMoved, let root = remote.root, let identity = sharing.identity,
              let ended = committer.formatTwo?.specialFiles.filter({ $0.role == .endedGrant }).map(\.name), !ended.isEmpty else {
            return []
        }
        let withdrawn = try VaultRotation.recipients(sharing.ownerOptional).filter {
            ended.contains(try GrantSeal.nameBytes(sharing: identity, with: $0, location: Label.localLocation))
        }
        var devices = Set<UInt16>()
        for (index, device) in root.devices.enumerated() {
            for recipient in withdrawn where try Self.isGranteeDevice(device.deviceID, pairedBy: identity, peer: recipient,
                                                                      sender: identity.publicKey, recipient: recipient) {
                devices.insert(UInt16(index))
            }
        }
        return devices
    }
}
