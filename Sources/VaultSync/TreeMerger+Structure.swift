/// The steps that make the merged items a tree again: folders restored under what was kept,
/// cycles broken, copies of conflicting versions, one name per folder, versions.
extension TreeMerger {
    /// A kept item's folder, deleted on one side, comes back from the side that still has it
    /// (the kept item's place came from a side where that folder exists, so one does).
    mutating func restoreParents() {
        var pending = result.keys.sorted()
        while let id = pending.popLast() {
            guard let parent = result[id]?.parent, parent != 0, result[parent] == nil else { continue }
            if let theirs = remote[parent] {
                result[parent] = theirs
                actions.append(.restoredFolder(id: parent, deletedOn: .local))
            } else if let mine = local[parent] {
                result[parent] = mine
                actions.append(.restoredFolder(id: parent, deletedOn: .remote))
            } else {
                // Unreachable for valid inputs; the item goes to the root rather than be lost.
                result[id]!.parent = SyncTree.rootID
                continue
            }
            pending.append(parent)
        }
    }

    /// Moves on both sides can put a folder inside itself (here A into B, there B into A). One
    /// item of each cycle whose place is not the remote's goes back to its remote place; such
    /// an item always exists, since the remote's tree has no cycle.
    mutating func breakCycles() {
        while let cycle = findCycle() {
            let candidates = cycle.filter { id in
                guard let theirs = remote[id] else { return false }
                return result[id]!.parent != theirs.parent
            }
            guard let id = candidates.min() else {
                // Not possible for valid inputs; never loop: put the lowest item at the root.
                result[cycle.min()!]!.parent = SyncTree.rootID
                continue
            }
            result[id]!.parent = remote[id]!.parent
            result[id]!.name = remote[id]!.name
            actions.append(.undidMove(id: id))
            restoreParents()
        }
    }

    /// The items of one cycle of parent links, if there is one.
    func findCycle() -> [UInt64]? {
        var state: [UInt64: Bool] = [SyncTree.rootID: true]  // true: reaches the root
        for start in result.keys.sorted() where state[start] == nil {
            var path: [UInt64] = [], onPath: Set<UInt64> = [], current = start
            while state[current] == nil, let item = result[current] {
                if !onPath.insert(current).inserted {
                    return Array(path[path.firstIndex(of: current)!...])
                }
                path.append(current)
                current = item.parent
            }
            for id in path { state[id] = true }
        }
        return nil
    }

    /// The local version of each item changed on both sides becomes a new item beside it.
    mutating func makeConflictCopies() {
        for id in conflicted {
            guard let kept = result[id], let mine = local[id] else { continue }
            let copy = makeID()
            result[copy] = SyncItem(id: copy, parent: kept.parent, name: conflictName(kept.name, kind: kept.kind, by: mine.changedBy),
                                    kind: mine.kind, version: mine.version, changedBy: mine.changedBy, content: mine.content)
            actions.append(.keptBothVersions(id: id, copy: copy))
        }
    }

    func conflictName(_ name: String, kind: SyncItem.Kind, by device: UInt16, number: Int = 1) -> String {
        ConflictName.make(name, device: context.deviceNames[device] ?? "device-\(device)", time: context.time,
                          number: number, hasExtension: kind != .folder)
    }

    /// One name per folder. Folders made since the base that meet another folder of their name
    /// merge into it; two new items with one name and one content become one; otherwise the
    /// first by `priority` keeps the name and the others get conflict names.
    mutating func resolveNameClashes() {
        var children: [UInt64: [UInt64]] = [:]
        for item in result.values where item.id != SyncTree.rootID { children[item.parent, default: []].append(item.id) }
        var pending = children.keys.sorted()
        while let folder = pending.popLast() {
            guard result[folder] != nil else { continue }
            let ids = (children[folder] ?? []).filter { result[$0]?.parent == folder }
            children[folder] = ids
            let groups = Dictionary(grouping: ids) { result[$0]!.name }
            var taken = Set(groups.keys)
            for (_, group) in groups.sorted(by: { $0.key < $1.key }) where group.count > 1 {
                var keepers: [UInt64] = []
                for id in group.sorted(by: priority) {
                    let item = result[id]!
                    if item.kind == .folder, base[id] == nil, let into = keepers.first(where: { result[$0]!.kind == .folder }) {
                        for child in children[id] ?? [] where result[child]?.parent == id {
                            result[child]!.parent = into
                            children[into, default: []].append(child)
                        }
                        children[id] = nil
                        result[id] = nil
                        actions.append(.mergedFolders(absorbed: id, into: into))
                        pending.append(into)
                    } else if item.kind != .folder, base[id] == nil,
                              let same = keepers.first(where: { base[$0] == nil && result[$0]!.kind == item.kind
                                                                && result[$0]!.content == item.content }) {
                        result[id] = nil
                        actions.append(.droppedDuplicate(id: id, of: same))
                    } else if keepers.isEmpty {
                        keepers.append(id)
                    } else {
                        // The item is not in its remote place (the remote has one item per name), so
                        // this device put it there.
                        var number = 1, name = conflictName(item.name, kind: item.kind, by: context.localDevice)
                        while taken.contains(name) {
                            number += 1
                            name = conflictName(item.name, kind: item.kind, by: context.localDevice, number: number)
                        }
                        taken.insert(name)
                        result[id]!.name = name
                        keepers.append(id)
                        actions.append(.renamed(id: id, to: name))
                    }
                }
            }
        }
    }

    /// Folders first; among folders one the base knew (so that new folders merge into it),
    /// among other items the one in its remote place (what other devices already see); then
    /// the other of the two, then the lowest ID.
    func priority(_ a: UInt64, _ b: UInt64) -> Bool {
        func rank(_ id: UInt64) -> (Int, Int, Int, UInt64) {
            let item = result[id]!
            let remotePlace = remote[id].map { $0.parent == item.parent && $0.name == item.name } ?? false ? 0 : 1
            let known = base[id] != nil ? 0 : 1
            return item.kind == .folder ? (0, known, remotePlace, id) : (1, remotePlace, known, id)
        }
        return rank(a) < rank(b)
    }

    /// An item equal to one side's record keeps that record's version (the higher one if it
    /// equals both: a change made and undone still counts); anything the merge changed gets a
    /// version above every side's, written by this device.
    mutating func setVersions() {
        for (id, item) in result {
            let equal = [remote[id], local[id]].compactMap { $0 }.filter { item.sameRecord(as: $0) }
            if let newest = equal.max(by: { $0.version < $1.version }) {
                result[id]!.version = newest.version; result[id]!.changedBy = newest.changedBy
            } else if remote[id] != nil || local[id] != nil {
                result[id]!.version = max(remote[id]?.version ?? 0, local[id]?.version ?? 0, base[id]?.version ?? 0) + 1
                result[id]!.changedBy = context.localDevice
            }
        }
    }
}
