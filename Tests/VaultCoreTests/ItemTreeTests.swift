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
}
