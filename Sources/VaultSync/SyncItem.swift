/// One item of a vault as the merge sees it (R-SYN-4): where it is (parent and name), what it
/// is (kind and an opaque content reference), and its version as format 2's item record keeps
/// it ("version + changedBy").
public struct SyncItem: Hashable, Sendable {
    public enum Kind: UInt8, Sendable { case folder, file, symlink, other }

    public var id: UInt64
    /// 0 for the root folder.
    public var parent: UInt64
    /// "" for the root folder.
    public var name: String
    public var kind: Kind
    /// +1 at every commit that changes the item.
    public var version: UInt64
    /// The device (its index in the vault's device table) that made the last change.
    public var changedBy: UInt16
    /// Everything of the item but its place (bytes, size, mode, times, extended attributes), as
    /// a reference the caller resolves: equal references mean equal payloads. The merge only
    /// compares them, so the caller may use a digest that holds no key.
    public var content: ContentReference

    public init(id: UInt64, parent: UInt64, name: String, kind: Kind, version: UInt64, changedBy: UInt16,
                content: ContentReference) {
        self.id = id; self.parent = parent; self.name = name; self.kind = kind
        self.version = version; self.changedBy = changedBy; self.content = content
    }

    /// The same item in the same place with the same payload, whatever its version.
    func sameRecord(as other: SyncItem) -> Bool {
        parent == other.parent && name == other.name && kind == other.kind && content == other.content
    }
}

/// What an item holds, opaque to the merge.
public struct ContentReference: Hashable, Sendable {
    public var bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public init(_ token: UInt64) { bytes = (0..<8).map { UInt8(truncatingIfNeeded: token >> (8 * $0)) } }
}
