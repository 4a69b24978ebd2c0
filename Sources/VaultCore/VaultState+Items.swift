import VaultCrypto
import VaultFormat

/// Operations on names and records: the item tree does them (`ItemTree`); what an item that
/// goes leaves behind (its files, its cached chunks, its key) is freed here.
extension VaultState {
    func item(_ id: UInt64) throws -> Item { try tree.item(id) }
    func file(_ id: UInt64) throws -> Item { try tree.file(id) }

    mutating func create(_ type: ItemRecord.ItemType, in parent: UInt64, named name: [UInt8], mode: UInt32, uid: UInt32,
                         gid: UInt32, rdev: UInt64, target: [UInt8]) throws -> UInt64 {
        try checkWritable()
        // Format 2 has no item keys: each seal has its own (docs/FORMAT.md §13.1).
        let arena = session.arena, random = session.random, format = self.format
        return try tree.create(type, in: parent, named: name, mode: mode, uid: uid, gid: gid, rdev: rdev, target: target,
                               now: session.clock.now(), makeKey: { format == .one ? try arena.allocateRandom(using: random) : nil })
    }

    mutating func link(_ id: UInt64, into parent: UInt64, named name: [UInt8]) throws {
        try checkWritable()
        try tree.link(id, into: parent, named: name, now: session.clock.now())
    }

    mutating func unlink(_ parent: UInt64, _ name: [UInt8], folder: Bool) throws {
        try checkWritable()
        free(try tree.unlink(parent, name, folder: folder, now: session.clock.now()))
    }

    mutating func rename(_ parent: UInt64, _ name: [UInt8], to newParent: UInt64, _ newName: [UInt8], replace: Bool) throws {
        try checkWritable()
        free(try tree.rename(parent, name, to: newParent, newName, replace: replace, now: session.clock.now()))
    }

    mutating func setAttributes(_ id: UInt64, mode: UInt32?, uid: UInt32?, gid: UInt32?, atime: Int64?, mtime: Int64?) throws {
        try checkWritable()
        try tree.setAttributes(id, mode: mode, uid: uid, gid: gid, atime: atime, mtime: mtime, now: session.clock.now())
    }

    mutating func setExtendedAttribute(_ id: UInt64, _ name: [UInt8], _ value: [UInt8]?, create: Bool, replace: Bool) throws {
        try checkWritable()
        try tree.setExtendedAttribute(id, name, value, create: create, replace: replace, now: session.clock.now())
    }

    mutating func hold(_ id: UInt64) { tree.hold(id) }
    mutating func release(_ id: UInt64) { free(tree.release(id)) }

    /// An item gone from the tree: its files are freed (after the next commit: the committed root
    /// still uses them), its chunks forgotten, its key erased (R-DEL-1).
    private mutating func free(_ deleted: ItemTree.Deleted?) {
        guard let (id, item) = deleted else { return }
        for ref in item.chunks.values { release(ref) }
        if let member = item.packedMember { releaseMember(id, member) }
        chunks.forget(id)
        if let slot = item.key { session.arena.free(slot) }
        if let slot = item.memberKey { session.arena.free(slot) }
    }

    mutating func releaseMember(_ id: UInt64, _ member: ItemRecord.Member) {
        if let emptied = packs.releaseMember(id, member) { writer.release(emptied) }
    }

    /// A stored chunk the item no longer uses: its file is free after the next commit, and a
    /// format-2 chunk's key is erased now (the committed root still holds its own copy).
    mutating func release(_ ref: StoredRef) {
        writer.release(ref.fileNumber)
        if let key = ref.key { session.arena.free(key) }
    }

    /// Format 2: the item's packed member is gone, and with it the member's key.
    mutating func forgetMemberKey(_ id: UInt64) {
        if let old = tree.setMemberKey(id, nil) { session.arena.free(old) }
    }
}
