import VaultSync

/// Short ways to write item trees for the merge tests. Device 1 ("desk") merges; device 2
/// ("laptop") wrote what the remote has.
enum MergeFixtures {
    static let time: Int64 = 1_795_000_000  // 2026-11-18T11:06:40Z
    static let stamp = "20261118T110640"
    static let context = TreeMerge.Context(localDevice: 1, deviceNames: [1: "desk", 2: "laptop"], time: time,
                                           nextItemID: 1_000)

    static func root(version: UInt64 = 1, content: UInt64 = 0) -> SyncItem {
        SyncItem(id: SyncTree.rootID, parent: 0, name: "", kind: .folder, version: version, changedBy: 0,
                 content: ContentReference(content))
    }

    static func file(_ id: UInt64, in parent: UInt64 = SyncTree.rootID, _ name: String, content: UInt64 = 0,
                     version: UInt64 = 1, by device: UInt16 = 0) -> SyncItem {
        SyncItem(id: id, parent: parent, name: name, kind: .file, version: version, changedBy: device,
                 content: ContentReference(content == 0 ? id : content))
    }

    static func folder(_ id: UInt64, in parent: UInt64 = SyncTree.rootID, _ name: String, content: UInt64 = 0,
                       version: UInt64 = 1, by device: UInt16 = 0) -> SyncItem {
        SyncItem(id: id, parent: parent, name: name, kind: .folder, version: version, changedBy: device,
                 content: ContentReference(content == 0 ? id : content))
    }

    static func tree(_ items: SyncItem...) -> SyncTree { SyncTree([root()] + items) }

    /// An item changed by `device`: one version up, with whatever the change sets.
    static func changed(_ item: SyncItem, by device: UInt16, parent: UInt64? = nil, name: String? = nil,
                        content: UInt64? = nil) -> SyncItem {
        var item = item
        item.version += 1
        item.changedBy = device
        if let parent { item.parent = parent }
        if let name { item.name = name }
        if let content { item.content = ContentReference(content) }
        return item
    }

    static func merge(_ base: SyncTree?, _ local: SyncTree, _ remote: SyncTree) -> TreeMerge.Result {
        TreeMerge.merge(base: base, local: local, remote: remote, context: context)
    }

    /// Items by path ("Documents/a.txt"), for checking a result by what a user sees.
    static func paths(_ tree: SyncTree) -> [String: SyncItem] {
        var paths: [String: SyncItem] = [:]
        for item in tree.items.values where item.id != SyncTree.rootID {
            var parts = [item.name], parent = item.parent
            while parent != SyncTree.rootID, let folder = tree[parent] { parts.insert(folder.name, at: 0); parent = folder.parent }
            paths[parts.joined(separator: "/")] = item
        }
        return paths
    }
}
