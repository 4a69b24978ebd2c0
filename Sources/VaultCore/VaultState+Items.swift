import VaultCrypto
import VaultFormat

/// Operations on names and records: the item tree does them (`ItemTree`); what an item that
/// goes leaves behind (its files, its cached chunks, its key) is freed here.
extension VaultState {
    func item(_ id: UInt64) throws -> Item { try tree.item(id) }
    func file(_ id: UInt64) throws -> Item { try tree.file(id) }

    /// The item a name gives, loaded. An entry that names an item whose record lacks that link
    /// is damage (§15.6), reported for that name only.
    mutating func lookup(_ parent: UInt64, _ name: [UInt8]) throws -> UInt64 {
        try fault(parent)
        let id = try tree.lookup(parent, name)
        // Read whole, the open checked every link against the entries; in part, each lookup does.
        guard loadsOnDemand else { return id }
        try fault(id)
        guard tree.items[id]?.record.links.contains(ItemRecord.Link(parentID: parent, name: name)) == true else {
            throw VaultError.damagedIndex("index 3: folder \(parent) has an entry for item \(id), which has no such name")
        }
        return id
    }

    mutating func create(_ type: ItemRecord.ItemType, in parent: UInt64, named name: [UInt8], mode: UInt32, uid: UInt32,
                         gid: UInt32, rdev: UInt64, target: [UInt8]) throws -> UInt64 {
        try checkWritable()
        try fault(parent)
        // Format 2 has no item keys: each seal has its own (docs/FORMAT.md §13.1).
        let arena = session.arena, random = session.random, format = self.format
        return try tree.create(type, in: parent, named: name, mode: mode, uid: uid, gid: gid, rdev: rdev, target: target,
                               now: session.clock.now(), makeKey: { format == .one ? try arena.allocateRandom(using: random) : nil })
    }

    mutating func link(_ id: UInt64, into parent: UInt64, named name: [UInt8]) throws {
        try checkWritable()
        try fault([id, parent])
        try tree.link(id, into: parent, named: name, now: session.clock.now())
    }

    mutating func unlink(_ parent: UInt64, _ name: [UInt8], folder: Bool) throws {
        try checkWritable()
        _ = try lookup(parent, name)
        free(try tree.unlink(parent, name, folder: folder, now: session.clock.now()))
    }

    mutating func rename(_ parent: UInt64, _ name: [UInt8], to newParent: UInt64, _ newName: [UInt8], replace: Bool) throws {
        try checkWritable()
        if loadsOnDemand {
            // The moved item, a replaced one, and the target's ancestors (the check for a cycle).
            _ = try lookup(parent, name)
            try fault(newParent)
            if (try? tree.folder(newParent))?[newName] != nil { _ = try lookup(newParent, newName) }
            var ancestor = tree.items[newParent]?.record.links.first?.parentID
            while let current = ancestor {
                try fault(current)
                ancestor = tree.items[current]?.record.links.first?.parentID
            }
        }
        free(try tree.rename(parent, name, to: newParent, newName, replace: replace, now: session.clock.now()))
    }

    mutating func setAttributes(_ id: UInt64, mode: UInt32?, uid: UInt32?, gid: UInt32?, atime: Int64?, mtime: Int64?) throws {
        try checkWritable()
        try fault(id)
        try tree.setAttributes(id, mode: mode, uid: uid, gid: gid, atime: atime, mtime: mtime, now: session.clock.now())
    }

    mutating func setExtendedAttribute(_ id: UInt64, _ name: [UInt8], _ value: [UInt8]?, create: Bool, replace: Bool) throws {
        try checkWritable()
        try fault(id)
        try tree.setExtendedAttribute(id, name, value, create: create, replace: replace, now: session.clock.now())
    }

    mutating func hold(_ id: UInt64) { tree.hold(id) }
    /// The last handle's close also ends the file's read streams: what `noteRead` kept of them
    /// would otherwise stay for every file read this session.
    mutating func release(_ id: UInt64) {
        free(tree.release(id))
        if tree.items[id]?.holds == 0 { chunks.forgetReads(of: id) }
    }

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
