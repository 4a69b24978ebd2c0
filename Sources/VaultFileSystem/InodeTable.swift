/// The inodes the kernel knows: FUSE's lookup counts. An inode is known from the reply that
/// hands it out (lookup, create, mkdir, mknod, symlink, link) until `forget` brings its count
/// to zero. While known, the file system holds the vault item, so that an inode the kernel
/// still references stays valid after its last name is gone, as on a local file system.
struct InodeTable {
    struct Entry {
        var lookups: UInt64
        /// The folder it was last found in: ".." of a folder.
        var parent: UInt64
        /// The file's content version (`Vault.contentVersion`) at its last open: what the
        /// kernel's page cache of it holds; nil before the first.
        var cachedVersion: UInt64? = nil
    }

    private(set) var entries: [UInt64: Entry] = [:]

    /// Counts one more lookup; true when the inode was not known before (hold it).
    mutating func remember(_ inode: UInt64, parent: UInt64) -> Bool {
        if entries[inode] != nil {
            entries[inode]!.lookups += 1
            entries[inode]!.parent = parent
            return false
        }
        entries[inode] = Entry(lookups: 1, parent: parent)
        return true
    }

    /// Drops `count` lookups; true when the inode is no longer known (release it).
    mutating func forget(_ inode: UInt64, count: UInt64) -> Bool {
        guard let entry = entries[inode] else { return false }
        if entry.lookups > count {
            entries[inode]!.lookups -= count
            return false
        }
        entries[inode] = nil
        return true
    }

    func lookups(_ inode: UInt64) -> UInt64 { entries[inode]?.lookups ?? 0 }

    /// An open of the file, whose content is at `version`: whether the kernel may keep what it
    /// cached of it (the content has not changed since the last open; the kernel's own writes
    /// count as changes too, which costs one read from the vault). From now on it caches
    /// `version`. The cache goes with the kernel's inode, so a forgotten inode starts unknown.
    mutating func opened(_ inode: UInt64, at version: UInt64) -> Bool {
        guard let entry = entries[inode] else { return false }
        entries[inode]!.cachedVersion = version
        return entry.cachedVersion == version
    }

    func parent(_ inode: UInt64) -> UInt64? { entries[inode]?.parent }

    mutating func moved(_ inode: UInt64, to parent: UInt64) {
        entries[inode]?.parent = parent
    }

    mutating func removeAll() -> [UInt64] {
        defer { entries = [:] }
        return Array(entries.keys)
    }
}
