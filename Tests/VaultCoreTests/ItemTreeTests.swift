import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat

/// The item tree alone: names, links, the rules that keep an index valid, and what it hands
/// back when an item goes. No storage, no keys.
@Suite struct ItemTreeTests {
    static let now: Int64 = 1_700_000_000_000_000_000
    static let root = Format.rootItemID

    static func tree() -> ItemTree {
        ItemTree(root: ItemRecord(type: .folder, mode: 0o755, uid: 0, gid: 0, atime: now, mtime: now, ctime: now))
    }

    let arena = SecretArena()

    func make(_ tree: inout ItemTree, _ type: ItemRecord.ItemType, _ name: String, in parent: UInt64 = root) throws -> UInt64 {
        try tree.create(type, in: parent, named: Array(name.utf8), mode: 0o644, uid: 0, gid: 0, rdev: 0,
                        target: type == .symlink ? Array("t".utf8) : [], now: Self.now,
                        makeKey: { try arena.allocateRandom() })
    }

    @Test func namesAndLookups() throws {
        var tree = Self.tree()
        let folder = try make(&tree, .folder, "d")
        let file = try make(&tree, .file, "f", in: folder)
        #expect(try tree.lookup(folder, Array("f".utf8)) == file)
        #expect(tree.dirtyItems == [Self.root, folder, file])
        #expect(throws: VaultError.exists) { try make(&tree, .file, "f", in: folder) }
        #expect(throws: VaultError.notAFolder) { try tree.lookup(file, Array("x".utf8)) }
        #expect(throws: VaultError.invalidMove) { try make(&tree, .folder, "..") }
        #expect(throws: VaultError.tooLarge("name longer than 255 bytes")) {
            try make(&tree, .folder, String(repeating: "n", count: 256))
        }
        #expect(tree.linkCount(folder, try tree.item(folder)) == 2)
        #expect(tree.linkCount(Self.root, try tree.item(Self.root)) == 3)
        #expect(tree.nextItemID == file + 1)
    }

    @Test func anItemGoesWithItsLastNameUnlessHeld() throws {
        var tree = Self.tree()
        let file = try make(&tree, .file, "a")
        try tree.link(file, into: Self.root, named: Array("b".utf8), now: Self.now)
        let first = try tree.unlink(Self.root, Array("a".utf8), folder: false, now: Self.now)
        #expect(first == nil, "one name is left")
        tree.hold(file)
        let last = try tree.unlink(Self.root, Array("b".utf8), folder: false, now: Self.now)
        #expect(last == nil, "an open file stays")
        #expect(try tree.item(file).record.links.isEmpty)
        let released = tree.release(file)
        let deleted = try #require(released)
        #expect(deleted.id == file)
        #expect(deleted.item.key != nil, "the caller erases the key")
        #expect(tree.removedKeys == [.item(file)])
        #expect(throws: VaultError.notFound) { try tree.item(file) }
    }

    @Test func renameKeepsTheTreeValid() throws {
        var tree = Self.tree()
        let a = try make(&tree, .folder, "a")
        let b = try make(&tree, .folder, "b", in: a)
        #expect(throws: VaultError.invalidMove) {
            try tree.rename(Self.root, Array("a".utf8), to: b, Array("a".utf8), replace: true, now: Self.now)
        }
        let f = try make(&tree, .file, "f")
        let g = try make(&tree, .file, "g")
        #expect(throws: VaultError.exists) {
            try tree.rename(Self.root, Array("f".utf8), to: Self.root, Array("g".utf8), replace: false, now: Self.now)
        }
        #expect(throws: VaultError.isAFolder) {
            try tree.rename(Self.root, Array("f".utf8), to: Self.root, Array("a".utf8), replace: true, now: Self.now)
        }
        let replaced = try tree.rename(Self.root, Array("f".utf8), to: Self.root, Array("g".utf8), replace: true, now: Self.now)
        #expect(replaced?.id == g, "the replaced file goes, and is handed back")
        #expect(try tree.lookup(Self.root, Array("g".utf8)) == f)
        #expect(throws: VaultError.notFound) { try tree.lookup(Self.root, Array("f".utf8)) }
    }

    @Test func recordsStayWithinTheSizeCap() throws {
        var tree = Self.tree()
        let file = try make(&tree, .file, "f")
        let value = [UInt8](repeating: 1, count: 30_000)
        try tree.setExtendedAttribute(file, Array("user.a".utf8), value, create: true, replace: false, now: Self.now)
        #expect(throws: VaultError.tooLarge("extended attributes")) {
            try tree.setExtendedAttribute(file, Array("user.b".utf8), value, create: true, replace: false, now: Self.now)
        }
        // Long names until the record would outgrow `maximumRecordSize`: refused, nothing changed.
        var refused = false
        for n in 0..<ItemTree.maximumLinks {
            let name = Array("\(n)-".utf8) + [UInt8](repeating: 0x6C, count: 200)
            do {
                try tree.link(file, into: Self.root, named: name, now: Self.now)
            } catch VaultError.tooLarge(let what) {
                #expect(what == "the item's names and attributes")
                refused = true
                break
            }
        }
        #expect(refused)
        let record = try tree.item(file).record
        #expect(record.encode().count + Format.keySize <= ItemTree.maximumRecordSize)
        #expect(try tree.folder(Self.root).count == record.links.count)
    }

    @Test func chunksMarkTheirSegments() throws {
        var tree = Self.tree()
        let file = try make(&tree, .file, "f")
        tree.didCommit()
        let ref = StoredRef(fileNumber: 20, nonce: [UInt8](repeating: 1, count: 24))
        let none = tree.setChunk(file, 1025, ref)
        #expect(none == nil)
        #expect(tree.dirtySegments[file] == [1])
        #expect(tree.dirtyItems == [file])
        let old = tree.setChunk(file, 1025, nil)
        #expect(old == ref, "the old place is handed back to be freed")
        tree.setChunk(file, 3, ref)
        let removed = tree.removeAllChunks(file)
        #expect(removed == [3: ref])
        #expect(tree.dirtySegments[file] == [0, 1])
    }

    /// An item is one reference in the tree's dictionary (its fields in one object, copied on
    /// write): a vault of 10^5 items would otherwise hold twice that many record-sized buckets.
    @Test func anItemTakesOneWordInTheTree() {
        #expect(MemoryLayout<Item>.size == MemoryLayout<AnyObject>.size)
    }

    /// The items of a copied tree (a commit encodes from one, sync merges against one) do not
    /// move when the original changes, nor the original's when the copy does.
    @Test func copiedTreesKeepTheirOwnItems() throws {
        var tree = Self.tree()
        let file = try make(&tree, .file, "f")
        tree.hold(file)
        let copy = tree
        try tree.setAttributes(file, mode: 0o600, uid: 7, gid: nil, atime: nil, mtime: 5, now: Self.now + 1)
        tree.setChunk(file, 3, StoredRef(fileNumber: 99, nonce: [UInt8](repeating: 1, count: Format.sealNonceSize)))
        tree.hold(file)
        try tree.rename(Self.root, Array("f".utf8), to: Self.root, Array("g".utf8), replace: false, now: Self.now + 2)
        let before = try copy.item(file)
        #expect(before.record.mode == 0o644 && before.record.uid == 0 && before.record.mtime == Self.now)
        #expect(before.record.links == [ItemRecord.Link(parentID: Self.root, name: Array("f".utf8))])
        #expect(before.chunks.isEmpty && before.holds == 1)
        let after = try tree.item(file)
        #expect(after.record.mode == 0o600 && after.record.uid == 7 && after.record.mtime == 5 && after.holds == 2)
        #expect(after.chunks[3]?.fileNumber == 99)

        var second = tree
        _ = second.release(file)
        second.update(file) { $0.size = 10 }
        #expect(try tree.item(file).holds == 2 && tree.item(file).record.size == 0)
        #expect(try second.item(file).holds == 1 && second.item(file).record.size == 10)
    }
}
