import VaultCrypto
import VaultFormat

/// The owner's devices share as one identity (docs/FORMAT.md §13.11, §14.9): the remote's
/// unlock record carries the identity (tag 16) and the recipients (tag 1025) of the owner's
/// record, a device that joins takes them into its own record, and a sync brings the two records
/// together: a device without an identity takes the remote's, each side gets the recipients
/// the other lacks. A device that made an identity of its own before (a release without this)
/// keeps it: its grants are named from it.
extension VaultState {
    /// The identity and recipients of the remote's record, as this device's own record should
    /// hold them; returns whether the remote's record lacks what this device's holds (the sync
    /// writes it again). Writes this device's record when it takes anything.
    mutating func takeRemoteIdentity(_ record: UnlockRecord) throws -> Bool {
        let theirs = VaultRotation.recipients(record.optional)
        let adopted = sharing.identity == nil
        if adopted && record.identityKey.isEmpty { return false }
        if !adopted && record.identityKey.isEmpty { return true }
        let identity = try sharing.identity ?? X25519.PrivateKey(rawRepresentation: record.identityKey)
        var own = identity.rawRepresentation.copyBytes()
        defer { Sealer.wipe(&own) }
        // Another identity than the remote's: each keeps its own (its grants are named from it).
        guard ConstantTime.equals(own, record.identityKey) else { return false }
        let mine = VaultRotation.recipients(sharing.ownerOptional)
        let missing = theirs.filter { !mine.contains($0) }
        if adopted || !missing.isEmpty {
            let all = mine + missing
            let optional = all.isEmpty ? sharing.ownerOptional
                : VaultRotation.with(sharing.ownerOptional, tag: UnlockRecord.Tag.recipients, value: all.flatMap { $0 })
            do { try writeOwnerRecord(identity: identity, optional: optional) } catch {
                if adopted { identity.rawRepresentation.wipe() }
                throw error
            }
            sharing.identity = identity
        }
        return mine.contains { !theirs.contains($0) }
    }

    /// What of the owner's record the remote's carries: the identity and the recipients, never a
    /// withdrawal's state (tags 1024, 1026, 1027 are this device's own).
    var sharedOwnerTags: (identity: [UInt8], optional: [IndexRootV2.Extension]) {
        (sharing.identity?.rawRepresentation.copyBytes() ?? [], sharing.ownerOptional.filter { $0.tag == UnlockRecord.Tag.recipients })
    }

    /// A device of the owner that joined takes the identity and recipients of the remote's
    /// record (the record it seals for itself holds them): the identity its new, empty vault
    /// made is never written, and goes.
    mutating func joinIdentity(_ record: UnlockRecord) throws {
        sharing.identity?.rawRepresentation.wipe()
        sharing.identity = record.identityKey.isEmpty ? nil : try X25519.PrivateKey(rawRepresentation: record.identityKey)
        sharing.ownerOptional = record.optional.filter { $0.tag == UnlockRecord.Tag.recipients }
    }
}
