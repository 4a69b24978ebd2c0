/// The format a vault's storage is written in (docs/FORMAT.md §2–§9 and §13). Chosen at open:
/// a new vault is format 2, a vault found through the pattern's index names is format 1 (and,
/// opened for writing, format 2 in memory until its first commit upgrades it: `FormatOneUpgrade`).
/// Every place that seals or encodes asks this once; the format's own code lives in the
/// `FormatTwo…` files and the format-2 extensions of the parts.
enum StorageFormat: Sendable {
    case one, two

    /// The envelope version of §4 / §13.2.
    var envelopeVersion: UInt8 { self == .one ? 1 : 2 }
}
