/// The remote's tree as the owner's sync that moves the remote after a withdrawal merges it
/// (FORMAT.md §14.8, "Sync after a withdrawal"): until that sync the remote is under the keys the
/// withdrawn person still holds, and what their devices wrote there since the base must not come
/// in (README, "Taking a share back"). A record names the device that last changed it, so their
/// changes go back to the base and their new items go; a deletion names no device, so every
/// item the remote deleted since the base is taken as not deleted there (a delete by another
/// of the owner's devices in that window is undone once; nothing is lost).
enum WithdrawnChanges {
    /// `remote` without what `devices` changed since `base`, still a valid tree: an item put
    /// back whose folder is not in the tree any more, or that would close a cycle, stays as the
    /// remote has it (absent, or in the remote's place); a new folder of theirs that holds an
    /// item of someone else's stays, so that item keeps its place.
    static func removed(from remote: SyncTree, base: SyncTree?, devices: Set<UInt16>, local: SyncTree) -> SyncTree {
        guard let base, !devices.isEmpty else { return remote }
        var items = remote.items
        var dropped: [UInt64: SyncItem] = [:]
        for (id, item) in remote.items where devices.contains(item.changedBy) {
            if let old = base[id] {
                if !item.sameRecord(as: old) { items[id] = old }
            } else {
                items[id] = nil
                dropped[id] = item
            }
        }
        // An item both sides deleted needs nothing back; one the local tree still has does.
        for (id, old) in base.items where remote[id] == nil && local[id] != nil { items[id] = old }
        var stray = Self.stray(items)
        while !stray.isEmpty {
            var changed = false
            for id in stray {
                guard let item = items[id] else { continue }
                if let parent = dropped.removeValue(forKey: item.parent) {
                    items[item.parent] = parent
                    changed = true
                } else if item != remote[id] {
                    items[id] = remote[id]
                    changed = true
                }
            }
            // Each round moves an item back to the remote's tree, which is valid; never reached.
            if !changed { return remote }
            stray = Self.stray(items)
        }
        return SyncTree(items: items)
    }

    /// The merge of `local` and `remote` against `base` with what `devices` changed on the
    /// remote since the base left out (`removed`).
    static func merge(base: SyncTree?, local: SyncTree, remote: SyncTree, devices: Set<UInt16>,
                      context: TreeMerge.Context) -> TreeMerge.Result {
        TreeMerge.merge(base: base, local: local, remote: removed(from: remote, base: base, devices: devices, local: local), context: context)
    }

    /// The IDs of `remote`'s items whose content that merge does not take: a round that fetches
    /// before it merges (SYNC-DESIGN §3.6 step 2) leaves their files on the remote. What
    /// `devices` wrote since the base, and what only this side changed or deleted since: a file
    /// deleted or rewritten here that the remote kept, or, in a round run again after one cut
    /// before its root went up, which has the tree it read for base, their changes. Read off the
    /// merge itself, so that the same merge on the same local tree never takes one (the merge
    /// takes a payload by its digest, `SyncTrees.mergedItems`).
    static func leftOut(from remote: SyncTree, base: SyncTree?, devices: Set<UInt16>, local: SyncTree,
                        context: TreeMerge.Context) -> Set<UInt64> {
        let merged = merge(base: base, local: local, remote: remote, devices: devices, context: context).tree
        let contents = Set(merged.items.values.map(\.content))
        return Set(remote.items.values.filter { !contents.contains($0.content) }.map(\.id))
    }

    /// The items whose chain of folders does not reach the root (a missing folder, a cycle).
    private static func stray(_ items: [UInt64: SyncItem]) -> [UInt64] {
        var reaches: Set<UInt64> = [SyncTree.rootID], stray: [UInt64] = []
        for start in items.keys.sorted() where !reaches.contains(start) {
            var path: [UInt64] = [], seen: Set<UInt64> = [], current = start
            while !reaches.contains(current), let item = items[current], seen.insert(current).inserted {
                path.append(current)
                current = item.parent
            }
            if reaches.contains(current) { reaches.formUnion(path) } else { stray.append(start) }
        }
        return stray
    }
}
