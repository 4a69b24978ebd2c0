/// A vault's item tree as the merge sees it: items by ID, the root folder (ID 1) at parent 0.
public struct SyncTree: Equatable, Sendable {
    public static let rootID: UInt64 = 1

    public private(set) var items: [UInt64: SyncItem]

    public init(_ items: [SyncItem]) {
        self.items = Dictionary(items.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    init(items: [UInt64: SyncItem]) { self.items = items }

    public subscript(id: UInt64) -> SyncItem? { items[id] }

    /// The children of each folder, sorted by ID.
    public func children() -> [UInt64: [UInt64]] {
        var children: [UInt64: [UInt64]] = [:]
        for item in items.values where item.id != Self.rootID { children[item.parent, default: []].append(item.id) }
        for key in children.keys { children[key]!.sort() }
        return children
    }

    /// What makes this not a tree a vault can hold, one line each; empty when it is one: a root
    /// folder, every other item in a folder of the tree, no cycle, valid names unique per folder.
    public func problems() -> [String] {
        var problems: [String] = []
        guard let root = items[Self.rootID], root.kind == .folder, root.parent == 0 else { return ["no root folder"] }
        for item in items.values.sorted(by: { $0.id < $1.id }) where item.id != Self.rootID {
            if !Self.isValidName(item.name) { problems.append("item \(item.id) has an invalid name") }
            guard let parent = items[item.parent] else { problems.append("item \(item.id) is in missing folder \(item.parent)"); continue }
            if parent.kind != .folder { problems.append("item \(item.id) is in item \(parent.id), not a folder") }
        }
        var reachesRoot: Set<UInt64> = [Self.rootID]
        for start in items.keys where !reachesRoot.contains(start) {
            var path: [UInt64] = [], seen: Set<UInt64> = [], current = start
            while !reachesRoot.contains(current), let item = items[current], seen.insert(current).inserted {
                path.append(current)
                current = item.parent
            }
            if reachesRoot.contains(current) { reachesRoot.formUnion(path) } else if items[current] != nil {
                problems.append("item \(start) is in a cycle")
            }
        }
        for (folder, ids) in children() {
            var names: Set<String> = []
            for id in ids where !names.insert(items[id]!.name).inserted {
                problems.append("folder \(folder) holds the name of item \(id) twice")
            }
        }
        return problems
    }

    /// The names a vault accepts (R-SEC-3): not empty, `.` or `..`, no `/` or NUL, at most 255 bytes.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && name.utf8.count <= 255 && !name.utf8.contains(0x2f)
            && !name.utf8.contains(0)
    }

    mutating func set(_ item: SyncItem) { items[item.id] = item }
    mutating func remove(_ id: UInt64) { items[id] = nil }
}
