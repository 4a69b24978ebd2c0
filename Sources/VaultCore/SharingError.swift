/// Why a vault could not be shared or opened through a grant (docs/FORMAT.md §14.7). The
/// description is the one line users see; the grant's own failures are `GrantSeal.Failure`.
public enum SharingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A format-1 vault (opened read-only: not upgraded) has no unlock record to hold an identity.
    case formatOne
    /// The vault was opened through a grant: only its owner holds the identity that grants.
    case sharedWithYou
    /// The root lists a grant to this contact code already.
    case alreadyShared
    /// No grant from that contact code to this vault is in the storage.
    case noGrant
    /// The grant opened, but the vault it names has no root in this storage.
    case sharedVaultMissing
    /// `unshare`: the root lists no grant to that contact code.
    case notShared
    /// `unshare`: a grant of the vault has a recipient its owner's record does not list (a
    /// grant made before the record kept them), so it could not be given the new keys.
    case unknownRecipient
    /// The grant at that code's name is an ended grant: its owner withdrew it (§14.8).
    case accessEnded
    /// Sync: no grant from that contact code to this vault, in this storage or on the remote.
    case noGrantOnRemote
    /// Sync: the grant on the remote opened, but the remote holds no root of its vault yet.
    case sharedVaultNotOnRemote
    /// Sync: the grant on the remote names another vault than the one in this storage.
    case otherSharedVault
    /// Sync: the shared vault in this storage came from another device's storage (a copy), not
    /// from this person's own sync: syncing it would write as that device.
    case copiedStorage

    public var description: String {
        switch self {
        case .formatOne:
            "this vault is in format 1, which cannot share; mounted writable, it is upgraded to format 2"
        case .sharedWithYou:
            "this vault was shared with you: only its owner can share it"
        case .alreadyShared:
            "this vault is shared with that contact code already"
        case .noGrant:
            "no vault shared by that contact code with the vault this pattern opens is in this storage"
        case .sharedVaultMissing:
            "the shared vault's index is not in this storage (copy or sync the whole storage)"
        case .notShared:
            "this vault is not shared with that contact code; nothing was changed"
        case .unknownRecipient:
            "a grant of this vault was made before DotSafe kept its recipient's code, so it cannot be given new keys; nothing was changed"
        case .accessEnded:
            "access to the vault shared by that contact code ended: its owner withdrew it, and nothing written since reaches you or them"
        case .noGrantOnRemote:
            "no vault shared by that contact code with the vault this pattern opens is in this storage or on the remote"
        case .sharedVaultNotOnRemote:
            "the shared vault's index is not on the remote yet: its owner's next sync puts it there"
        case .otherSharedVault:
            "the grant on the remote names another vault than the one shared with you in this storage; nothing was changed"
        case .copiedStorage:
            "the vault shared with you in this storage was copied from another device's storage, and syncing it would write as that device; nothing was changed (sync --shared into a storage folder that does not hold it)"
        }
    }
}
