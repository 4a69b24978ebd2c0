/// The three-way merge of two item trees against their last synced state (R-SYN-4), as pure
/// code: docs/SYNC-DESIGN.md states the rules. The result is a valid tree that keeps every
/// version of every file written on either side since the base.
public struct TreeMerge {
    public struct Context: Sendable {
        /// This device's index in the device table: what it writes into changed records.
        public var localDevice: UInt16
        /// Names of devices by index, for conflict names (a missing one: `device-N`).
        public var deviceNames: [UInt16: String]
        /// When the merge runs (Unix seconds): the time in conflict names.
        public var time: Int64
        /// The first ID this device may give a new item; IDs in use on any side are skipped.
        public var nextItemID: UInt64

        public init(localDevice: UInt16, deviceNames: [UInt16: String], time: Int64, nextItemID: UInt64) {
            self.localDevice = localDevice; self.deviceNames = deviceNames; self.time = time; self.nextItemID = nextItemID
        }
    }

    public struct Result: Sendable {
        public var tree: SyncTree
        public var actions: [MergeAction]
        /// Where this device's next new item ID starts.
        public var nextItemID: UInt64
    }

    /// Merges `local` and `remote`, which both descend from `base` (nil: two lineages that
    /// started separately, such as two devices that each made the vault before their first
    /// sync). Both trees must be valid (`SyncTree.problems()` empty); the result is.
    public static func merge(base: SyncTree?, local: SyncTree, remote: SyncTree, context: Context) -> Result {
        var merger = TreeMerger(base: base?.items ?? [:], local: local.items, remote: remote.items, context: context)
        merger.run()
        return Result(tree: SyncTree(items: merger.result), actions: merger.actions, nextItemID: merger.nextID)
    }
}

/// The merge's working state; each step is a method, in the order `run` calls them.
struct TreeMerger {
    typealias Side = MergeAction.Side
    let base: [UInt64: SyncItem]
    var local: [UInt64: SyncItem]
    let remote: [UInt64: SyncItem]
    let context: TreeMerge.Context
    var result: [UInt64: SyncItem] = [:]
    var actions: [MergeAction] = []
    var nextID: UInt64
    /// Items changed on both sides whose local version becomes a copy.
    var conflicted: [UInt64] = []

    init(base: [UInt64: SyncItem], local: [UInt64: SyncItem], remote: [UInt64: SyncItem], context: TreeMerge.Context) {
        self.base = base; self.local = local; self.remote = remote; self.context = context
        nextID = context.nextItemID
    }

    mutating func run() {
        reassignCollidingIDs()
        mergeItems()
        restoreParents()
        breakCycles()
        makeConflictCopies()
        resolveNameClashes()
        setVersions()
    }

    /// An ID made on both sides since the base, for two different items: the local one gets a
    /// new ID (the remote's lineage is the one others already hold).
    mutating func reassignCollidingIDs() {
        for id in local.keys.sorted() where id != SyncTree.rootID && base[id] == nil {
            guard let mine = local[id], let theirs = remote[id], !mine.sameRecord(as: theirs) else { continue }
            let new = makeID()
            local[id] = nil
            local[new] = SyncItem(id: new, parent: mine.parent, name: mine.name, kind: mine.kind, version: mine.version,
                                  changedBy: mine.changedBy, content: mine.content)
            for child in local.values where child.parent == id { local[child.id]!.parent = new }
            actions.append(.reassignedID(from: id, to: new))
        }
    }

    mutating func makeID() -> UInt64 {
        while nextID <= SyncTree.rootID || base[nextID] != nil || local[nextID] != nil || remote[nextID] != nil
                || result[nextID] != nil {
            nextID &+= 1
        }
        defer { nextID &+= 1 }
        return nextID
    }

    /// Each item on its own: which survive, with which payload and in which place.
    mutating func mergeItems() {
        for id in Set(local.keys).union(remote.keys).sorted() {
            let old = base[id]
            switch (local[id], remote[id]) {
            case let (mine?, theirs?):
                result[id] = mergeBoth(mine, theirs, old)
            case let (mine?, nil):
                if let old, !changed(mine, since: old) { continue }
                result[id] = mine
                if old != nil { actions.append(.keptEditOverDelete(id: id, deletedOn: .remote)) }
            case let (nil, theirs?):
                if let old, !changed(theirs, since: old) { continue }
                result[id] = theirs
                if old != nil { actions.append(.keptEditOverDelete(id: id, deletedOn: .local)) }
            case (nil, nil):
                continue
            }
        }
    }

    /// By the record, not its version: a device's commit can count a new version of a record it
    /// copied unchanged (the merge wrote it), and a delete must not lose to such a bump (seen in
    /// the kill -9 trials as a deleted file that came back).
    func changed(_ item: SyncItem, since old: SyncItem) -> Bool { !item.sameRecord(as: old) }

    /// Payload and place are merged apart, and the place's two halves (folder, name) too: a
    /// rename here and a move there give a renamed, moved item.
    mutating func mergeBoth(_ mine: SyncItem, _ theirs: SyncItem, _ old: SyncItem?) -> SyncItem {
        var merged = theirs
        if mine.content != theirs.content {
            if let old, theirs.content == old.content {
                merged.content = mine.content
            } else if old == nil || mine.content != old!.content {
                if mine.kind == .folder {
                    actions.append(.keptRemoteAttributes(id: mine.id))
                } else {
                    conflicted.append(mine.id)
                }
            }
        }
        let parent = threeWay(mine.parent, theirs.parent, old?.parent)
        let name = threeWay(mine.name, theirs.name, old?.name)
        merged.parent = parent.value
        merged.name = name.value
        if parent.conflict || name.conflict { actions.append(.keptRemotePlace(id: mine.id)) }
        return merged
    }

    /// The value of one field: a change on one side wins; changes on both sides that differ
    /// keep the remote's.
    func threeWay<T: Equatable>(_ mine: T, _ theirs: T, _ old: T?) -> (value: T, conflict: Bool) {
        if mine == theirs || mine == old { return (theirs, false) }
        if theirs == old { return (mine, false) }
        return (theirs, true)
    }
}
