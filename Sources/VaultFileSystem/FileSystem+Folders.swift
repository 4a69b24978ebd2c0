import Glibc
import VaultCore

/// Folder listings: opendir, readdir, readdirplus, releasedir.
extension FileSystem {
    public func openDirectory(_ inode: UInt64) throws(FSError) -> UInt64 {
        try withState { state in
            let entries = try vault.contents(ofFolder: inode)
            let parent = inode == Self.rootInode ? Self.rootInode : state.inodes.parent(inode) ?? Self.rootInode
            return openHandle(.directory(HandleTable.OpenDirectory(inode: inode, entries: entries, parent: parent)), &state)
        }
    }

    /// Up to `limit` entries from `offset` (0 starts with "." and ".."; then each entry's
    /// `nextOffset`). Offset 0 lists the folder again (rewinddir).
    public func readDirectory(_ handle: UInt64, offset: Int64, limit: Int) throws(FSError) -> [DirectoryEntry] {
        try withState { state in try listing(handle, offset: offset, limit: limit, &state).entries }
    }

    /// readdirplus: the entries with their attributes, so that `ls -l` needs no lookup per
    /// entry. Each entry but "." and ".." counts as a lookup, as the kernel counts it; the
    /// adapter forgets those that did not fit its buffer.
    public func readDirectoryPlus(_ handle: UInt64, offset: Int64, limit: Int) throws(FSError)
        -> [(entry: DirectoryEntry, attributes: FileAttributes?)] {
        try withState { state in
            let (folder, entries) = try listing(handle, offset: offset, limit: limit, &state)
            return try entries.map { entry in
                guard entry.name != [0x2E], entry.name != [0x2E, 0x2E] else { return (entry, nil) }
                let attributes = try fileAttributes(entry.inode)
                remember(entry.inode, parent: folder, &state)
                return (entry, attributes)
            }
        }
    }

    private func listing(_ handle: UInt64, offset: Int64, limit: Int, _ state: inout State) throws -> (folder: UInt64, entries: [DirectoryEntry]) {
        var directory = try state.handles.directory(handle)
        if offset == 0 && !directory.fresh { directory.entries = try vault.contents(ofFolder: directory.inode) }
        if directory.fresh || offset == 0 {
            directory.fresh = false
            state.handles.replaceDirectory(handle, directory)
        }
        var result: [DirectoryEntry] = []
        var index = max(0, Int(clamping: offset))
        while result.count < limit, index < directory.entries.count + 2 {
            defer { index += 1 }
            let next = Int64(index + 1)
            switch index {
            case 0: result.append(DirectoryEntry(name: [0x2E], inode: directory.inode, type: .directory, nextOffset: next))
            case 1: result.append(DirectoryEntry(name: [0x2E, 0x2E], inode: directory.parent, type: .directory, nextOffset: next))
            default:
                let entry = directory.entries[index - 2]
                // An entry removed since the listing was taken is left out.
                guard let attributes = try? vault.attributes(entry.id) else { continue }
                result.append(DirectoryEntry(name: entry.name, inode: entry.id, type: FileType(attributes.type), nextOffset: next))
            }
        }
        return (directory.inode, result)
    }

    public func releaseDirectory(_ handle: UInt64) { release(handle) }
}
