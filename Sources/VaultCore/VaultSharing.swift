import VaultCrypto
import VaultFormat

/// A vault's side of sharing (docs/FORMAT.md §14): the identity its owner's unlock record holds,
/// or, for a vault opened through a grant, the opener's own identity and the sharer's public
/// key. Keys live in locked memory and are wiped at lock with the rest.
struct VaultSharing {
    /// The owner's identity (tag 16 of the owner's record); nil before the vault has one.
    var identity: X25519.PrivateKey?
    /// The owner's record's tags from 1024 up, kept when the record is written again.
    var ownerOptional: [IndexRootV2.Extension] = []
    /// Set when the vault was opened through a grant.
    var received: Received?
    /// A grantee's sync following a withdrawal (§14.8) or a move of an upgraded vault's names
    /// (§13.12), until its commit has put the new grant in place: the grant's bytes as the
    /// remote holds them, the RL whose slots then go, and the files of other devices at the
    /// names their former names key gave them (the move's), which go too.
    /// (A device of the owner has no grant: its own record is written again with the new keys.)
    /// `lent`: this device's free files for the new slot names (taken when the follow starts,
    /// renamed to them just before its commit point), which the old slots fill.
    var following: (grant: [UInt8]?, formerLocator: SecretBytes, formerNames: [String], lent: [UInt64])?

    /// A follow's two free files for the new slots, taken before its sync downloads anything
    /// (`VaultState.prepareFollow`); `followRotation` takes them over.
    var lendable: [UInt64]?

    struct Received {
        /// The identity of the vault that opened the grant (the recipient's own vault).
        let recipient: X25519.PrivateKey
        /// The sharer's public key: its contact code.
        let sender: [UInt8]
    }

    init() {}

    /// From the owner's record as opened; the caller wipes the record's arrays.
    init(ownerRecord record: UnlockRecord) throws {
        if !record.identityKey.isEmpty { identity = try X25519.PrivateKey(rawRepresentation: record.identityKey) }
        ownerOptional = record.optional
    }

    func wipe() {
        identity?.rawRepresentation.wipe()
        // Keys of a withdrawal: the next one and the ones the remote may still hold (§14.8).
        for tag in ownerOptional where tag.tag == UnlockRecord.Tag.rotation || tag.tag == UnlockRecord.Tag.rotatedFrom {
            tag.value.wipeStorage()
        }
        received?.recipient.rawRepresentation.wipe()
        following?.formerLocator.wipe()
    }
}
