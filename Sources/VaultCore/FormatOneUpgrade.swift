/// A format-1 vault on its way to format 2 (docs/FORMAT.md §13.9, design §G): in memory it is
/// format 2 already, on disk still format 1 until the commit point of its first commit. Held by
/// the committer from the open until that commit point.
struct FormatOneUpgrade {
    /// The number of the file the owner's unlock record takes (its tag 3), and its name there.
    let recordNumber: UInt64
    let recordName: String
    /// The sealed record, still to be written over the free file `recordNumber` and renamed to
    /// `recordName`; nil once it is at its name (written by this session, or found there by an
    /// open that fell back to the format-1 root after a cut upgrade).
    var sealedRecord: [UInt8]?

    /// Whether the storage has the record at its name (then it is one of the vault's files).
    var recordIsPlaced: Bool { sealedRecord == nil }
}
