/// Why a pattern change is refused; nothing was written.
public enum PatternChangeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No vault is at the current pattern's names.
    case noVault
    /// The vault is in format 1 (its upgrade to format 2 is not built yet).
    case formatOne
    /// Something is at the new pattern's names: another vault, which the change would hide.
    case newPatternInUse
    /// The vault was upgraded from format 1 and holds a grant whose recipient its owner record
    /// does not list (a share made before tag 1025): the move cannot seal it again to the new
    /// root locator (FORMAT.md §13.12).
    case grantOfUnknownRecipient
    /// The vault was upgraded from format 1 and a withdrawal of a grant is not synced yet: the
    /// remote is at the keys before it.
    case withdrawalNotSynced
    /// The current pattern opened the vault through a record a finished change had retired.
    case formerPattern
    /// A device that joined the vault through sync: the owner record is the first device's.
    case notFirstDevice

    public var description: String {
        switch self {
        case .noVault: "no vault opens with this pattern"
        case .formatOne: "this vault is in the format of an older DotSafe (format 1), whose pattern cannot be changed yet"
        case .newPatternInUse: "the new pattern already opens another vault in this storage: changing to it would hide that vault"
        case .grantOfUnknownRecipient:
            "this vault, upgraded from the format of an older DotSafe (format 1), holds a grant made by an older DotSafe, which does not record its recipient, and a change of its pattern must seal every grant again: withdraw that grant (dotsafe unshare), change the pattern, then share again"
        case .withdrawalNotSynced:
            "this vault, upgraded from the format of an older DotSafe (format 1), has a withdrawn grant that is not synced yet: run dotsafe sync, then change the pattern"
        case .notFirstDevice: "this device joined the vault through sync: its pattern can be changed only on the device that made it, for now"
        case .formerPattern: "this vault's pattern was changed by an earlier repattern, which was interrupted and is now finished: use the new pattern"
        }
    }
}
