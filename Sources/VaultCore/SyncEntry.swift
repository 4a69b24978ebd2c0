import VaultFormat

/// One item of a vault as a sync compares it (docs/FORMAT.md §13.11): its place (first link),
/// its version, and a digest of everything else. No key and no content.
public struct SyncEntry: Equatable, Sendable {
    public var id: UInt64
    /// 0 for the root folder.
    public var parent: UInt64
    public var name: [UInt8]
    public var type: Vault.ItemType
    public var version: UInt64
    public var changedBy: UInt16
    /// `SyncBase.hashSize` bytes: equal digests, equal payloads.
    public var digest: [UInt8]
}

/// An item of the merged tree and where its payload comes from: the local vault's item
/// `sourceID` or the remote's.
public struct MergedItem: Equatable, Sendable {
    public enum Source: Equatable, Sendable { case local, remote }
    public var id: UInt64
    public var parent: UInt64
    public var name: [UInt8]
    public var version: UInt64
    public var changedBy: UInt16
    public var source: Source
    public var sourceID: UInt64

    public init(id: UInt64, parent: UInt64, name: [UInt8], version: UInt64, changedBy: UInt16, source: Source, sourceID: UInt64) {
        self.id = id; self.parent = parent; self.name = name; self.version = version
        self.changedBy = changedBy; self.source = source; self.sourceID = sourceID
    }
}

/// The local side of a sync: its items, its base, and who it is in the device table.
public struct LocalSyncView: Sendable {
    public var entries: [SyncEntry]
    public var header: SyncBase.Header?
    public var base: SyncBase?
    public var generation: UInt64
    /// Changes not committed yet (a library caller's; `dotsafe sync` opens the vault afresh and
    /// a mount's round commits first): `entries` hold them, `generation` does not count them.
    public var hasChanges: Bool
    public var isNew: Bool
    /// This device's index in the table, and every device's name by index.
    public var localDevice: UInt16
    public var deviceNames: [UInt16: String]
    public var nextItemID: UInt64
}

/// The sync base a device's committed root records (FORMAT.md §13.11), and the device's index.
public struct RecordedSyncBase: Sendable {
    public var header: SyncBase.Header
    public var base: SyncBase?
    public var localDevice: UInt16
}

/// What a sync moves to and from the remote, by storage name.
public struct SyncTransfer: Sendable {
    /// Own chunks and packs the remote lacks under their keys.
    public var blocks: [String] = []
    /// Own index pages the remote lacks under their keys.
    public var pages: [String] = []
    /// Other files of own groups the remote lacks (groups go up whole).
    public var groupFiles: [String] = []
    /// Own grants the remote lacks (FORMAT.md §14.9), at their names.
    public var grants: [String] = []
    /// Files of own groups the remote owned and this device released, and files at the own
    /// name of a number a grant took.
    public var remove: [String] = []

    /// In the order they go up: blocks, then the rest of their groups and the grants, then the
    /// pages (a root lists a grant only once it is there).
    public var upload: [String] { blocks + groupFiles + grants + pages }
}

/// What a mounted vault's sync decided from its local view: merge (with the remote's tree
/// changed since the base), only publish, or only confirm, against the remote generation it read.
public struct LiveSyncPlan: Sendable {
    /// The merged tree; nil when the remote did not change since the base.
    public var merged: [MergedItem]?
    public var nextItemID: UInt64
    public var readGeneration: UInt64
    /// False: nothing goes up; the remote holds the root of this device's last sync, which
    /// never learnt it, and the base moves to it.
    public var publishes: Bool
    /// With `publishes` false: that root was known to be up, and is read back; the pins kept
    /// for the root the sync before read go (`VaultState.releaseReadRootPins`).
    public var releasesReadPins = false
    /// Whether the round stays local when the remote root is the state's already (§3.3);
    /// false when something must go up whatever the state (a pattern change's record, a torn root).
    public var staysLocalWhenHeld: Bool

    public init(merged: [MergedItem]?, nextItemID: UInt64, readGeneration: UInt64, publishes: Bool = true, staysLocalWhenHeld: Bool = false) {
        self.merged = merged; self.nextItemID = nextItemID; self.readGeneration = readGeneration; self.publishes = publishes
        self.staysLocalWhenHeld = staysLocalWhenHeld
    }
}

/// A mounted vault's sync commit: what goes up, the remote root sealed at that commit (the
/// mount goes on committing), and what the merge changed for the kernel's caches.
public struct LiveSyncCommit: Sendable {
    public var transfer: SyncTransfer
    public var rootFiles: [(name: String, file: [UInt8])]
    /// The remote's unlock record, when the remote has none yet.
    public var unlockFile: [UInt8]?
    public var pulled: PulledChanges
    /// False: the merge's commit is the state the remote root holds already; nothing goes up.
    public var publishes = true
}
