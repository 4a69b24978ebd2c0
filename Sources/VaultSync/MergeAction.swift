/// A decision of the merge beyond taking each side's change: what the sync reports (conflicts)
/// and what it must apply (new IDs, copies).
public enum MergeAction: Equatable, Sendable {
    public enum Side: Sendable { case local, remote }

    /// An item made here had an ID that an item made elsewhere has too: the local one now has
    /// a new ID (made since format 2, it is sealed under keys of its own, not bound to its ID:
    /// only its records change; format 1's seals are bound to the ID, and a conflict copy that
    /// holds them is sealed again, `takeInKeptFiles`).
    case reassignedID(from: UInt64, to: UInt64)
    /// Changed on both sides: the remote's version keeps the item; this device's version is
    /// the new item `copy`, under a conflict name beside it.
    case keptBothVersions(id: UInt64, copy: UInt64)
    /// Deleted on one side, changed on the other: the change is kept.
    case keptEditOverDelete(id: UInt64, deletedOn: Side)
    /// A folder deleted on one side still holds something kept: the folder is kept too.
    case restoredFolder(id: UInt64, deletedOn: Side)
    /// Renamed or moved differently on both sides: the remote's place is kept.
    case keptRemotePlace(id: UInt64)
    /// Moves on the two sides would put a folder inside itself: this item stays where the
    /// remote has it.
    case undidMove(id: UInt64)
    /// A folder made since the last sync had the name of another folder: its items moved into
    /// that folder, and it is gone.
    case mergedFolders(absorbed: UInt64, into: UInt64)
    /// Two items made separately with one name and the same content: one is kept.
    case droppedDuplicate(id: UInt64, of: UInt64)
    /// Two items wanted one name in one folder: this one got a conflict name.
    case renamed(id: UInt64, to: String)
    /// A folder's own attributes (mode, times) changed on both sides: the remote's are kept.
    case keptRemoteAttributes(id: UInt64)
}
