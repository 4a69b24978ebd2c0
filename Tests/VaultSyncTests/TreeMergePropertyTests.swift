import Testing
@testable import VaultSync

/// Random bases edited at random on two sides (fixed seeds): whatever happens, the merge keeps
/// every version written, gives a tree, and leaves alone what only one side touched.
@Suite struct TreeMergePropertyTests {
    /// SplitMix64: the same trees on every run.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
        mutating func pick<T>(_ values: [T]) -> T { values[below(values.count)] }
    }

    static let names = ["a", "b", "c", "notes.txt", "photo.jpg", "Docs", "x.tar.gz", ".hidden"]

    /// A tree edited by one device: items made with IDs of its own range (or, now and then, of
    /// a range both devices use, to make colliding IDs), deleted, renamed, moved, changed.
    struct Editor {
        var tree: [UInt64: SyncItem]
        let device: UInt16
        var nextID: UInt64
        var nextContent: UInt64

        func isInside(_ id: UInt64, _ folder: UInt64) -> Bool {
            var current: UInt64? = folder
            while let here = current, here != 0 {
                if here == id { return true }
                current = tree[here]?.parent
            }
            return false
        }

        func freeName(in folder: UInt64, _ generator: inout Generator) -> String? {
            let name = generator.pick(names)
            return tree.values.contains { $0.parent == folder && $0.name == name && $0.id != SyncTree.rootID } ? nil : name
        }

        mutating func touch(_ id: UInt64) { tree[id]!.version += 1; tree[id]!.changedBy = device }

        mutating func edit(_ generator: inout Generator, sharedIDs: inout UInt64) {
            let folders = tree.values.filter { $0.kind == .folder }.map(\.id).sorted()
            let others = tree.keys.filter { $0 != SyncTree.rootID }.sorted()
            switch generator.below(6) {
            case 0:
                let folder = generator.pick(folders)
                guard let name = freeName(in: folder, &generator) else { return }
                let shared = generator.below(8) == 0
                let id: UInt64
                if shared { id = sharedIDs; sharedIDs += 1 } else { id = nextID; nextID += 1 }
                nextContent += 1
                tree[id] = SyncItem(id: id, parent: folder, name: name, kind: generator.below(3) == 0 ? .folder : .file,
                                    version: 1, changedBy: device, content: ContentReference(nextContent))
            case 1:
                guard !others.isEmpty else { return }
                let victim = generator.pick(others)
                let doomed = tree.keys.filter { isInside(victim, $0) }
                for id in doomed { tree[id] = nil }
            case 2:
                guard !others.isEmpty else { return }
                let id = generator.pick(others)
                guard let name = freeName(in: tree[id]!.parent, &generator) else { return }
                tree[id]!.name = name; touch(id)
            case 3:
                guard !others.isEmpty else { return }
                let id = generator.pick(others), folder = generator.pick(folders)
                guard !isInside(id, folder), !tree.values.contains(where: { $0.parent == folder && $0.name == tree[id]!.name }) else { return }
                tree[id]!.parent = folder; touch(id)
            default:
                guard !others.isEmpty else { return }
                let id = generator.pick(others)
                nextContent += 1
                tree[id]!.content = ContentReference(nextContent); touch(id)
            }
        }
    }

    static func randomBase(_ generator: inout Generator) -> SyncTree {
        var editor = Editor(tree: [SyncTree.rootID: MergeFixtures.root()], device: 0, nextID: 2, nextContent: 1 << 40)
        for _ in 0..<(5 + generator.below(25)) {
            // Only creations for the base.
            let folders = editor.tree.values.filter { $0.kind == .folder }.map(\.id).sorted()
            let folder = generator.pick(folders)
            guard let name = editor.freeName(in: folder, &generator) else { continue }
            editor.nextContent += 1
            editor.tree[editor.nextID] = SyncItem(id: editor.nextID, parent: folder, name: name,
                                                  kind: generator.below(3) == 0 ? .folder : .file, version: 1, changedBy: 0,
                                                  content: ContentReference(editor.nextContent))
            editor.nextID += 1
        }
        return SyncTree(Array(editor.tree.values))
    }

    static func edited(_ base: SyncTree, device: UInt16, edits: Int, _ generator: inout Generator, sharedIDs: inout UInt64) -> SyncTree {
        var editor = Editor(tree: base.items, device: device, nextID: UInt64(device) << 32 | 1,
                            nextContent: UInt64(device) << 48)
        for _ in 0..<edits { editor.edit(&generator, sharedIDs: &sharedIDs) }
        return SyncTree(Array(editor.tree.values))
    }

    static func merge(_ base: SyncTree?, _ local: SyncTree, _ remote: SyncTree) -> TreeMerge.Result {
        TreeMerge.merge(base: base, local: local, remote: remote, context: MergeFixtures.context)
    }

    @Test(arguments: [1, 2, 3, 4])
    func propertiesHold(seed: UInt64) {
        var generator = Generator(state: seed)
        var seen: Set<String> = []
        defer {
            // The rounds reach the rules that matter (else the properties above say little).
            for rule in ["keptBothVersions", "keptEditOverDelete", "restoredFolder", "reassignedID", "renamed", "mergedFolders"] {
                #expect(seen.contains(rule), "seed \(seed) never reached \(rule): \(seen.sorted())")
            }
        }
        for round in 0..<250 {
            let base = Self.randomBase(&generator)
            var shared: UInt64 = 500
            let local = Self.edited(base, device: 1, edits: generator.below(12), &generator, sharedIDs: &shared)
            shared = 500
            let remote = Self.edited(base, device: 2, edits: generator.below(12), &generator, sharedIDs: &shared)
            #expect(local.problems() == [] && remote.problems() == [], "the generator makes valid trees")
            let noBase = generator.below(5) == 0
            let result = Self.merge(noBase ? nil : base, local, remote)
            let tree = result.tree
            for action in result.actions { seen.insert(String(describing: action).prefix { $0 != "(" }.description) }
            let where_ = "seed \(seed) round \(round)"
            #expect(tree.problems() == [], "a tree: \(where_)")

            // Every version of a file written on either side since the base is somewhere.
            let contents = Set(tree.items.values.filter { $0.kind != .folder }.map { [$0.kind.rawValue] + $0.content.bytes })
            for side in [local, remote] {
                for item in side.items.values where item.kind != .folder {
                    let old = noBase ? nil : base[item.id]
                    guard old == nil || old!.content != item.content else { continue }
                    #expect(contents.contains([item.kind.rawValue] + item.content.bytes), "a version written is kept: \(where_)")
                }
            }
            // What both sides still have is kept; a file deleted on one side and untouched on
            // the other is gone.
            for id in local.items.keys where remote[id] != nil && (noBase ? false : base[id] != nil) {
                #expect(tree[id] != nil, "item on both sides kept: \(where_)")
            }
            if !noBase {
                for (id, old) in base.items where old.kind != .folder && local[id] == nil {
                    if remote[id] == old { #expect(tree[id] == nil, "a delete against no change deletes: \(where_)") }
                }
            }

            // No change on a side leaves the other side's tree exactly.
            #expect(Self.merge(base, local, local).tree == local, "merge(base, x, x) == x: \(where_)")
            #expect(Self.merge(base, base, remote).tree == remote, "merge(base, base, x) == x: \(where_)")
            #expect(Self.merge(base, local, base).tree == local, "merge(base, x, base) == x: \(where_)")
            #expect(Self.merge(base, local, local).actions == [])
            // A merged state is stable: merging it with itself changes nothing.
            #expect(Self.merge(tree, tree, tree).tree == tree)
        }
    }
}
