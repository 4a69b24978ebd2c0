import VaultCrypto
import VaultFormat

/// The item tree: names, links, attributes. Tree rules that keep the index valid (no cycles, no
/// duplicate names, folders with one name) are enforced here, so no sequence of calls can make an
/// index that the next open would reject.
extension VaultState {
    func item(_ id: UInt64) throws -> Item {
        guard !isLocked else { throw VaultError.locked }
        guard let item = items[id] else { throw VaultError.notFound }
        return item
    }

    func folder(_ id: UInt64) throws -> [[UInt8]: UInt64] {
        guard let entries = try item(id).isFolder ? children[id] : nil else { throw VaultError.notAFolder }
        return entries
    }

    func lookup(_ parent: UInt64, _ name: [UInt8]) throws -> UInt64 {
        guard let id = try folder(parent)[name] else { throw VaultError.notFound }
        return id
    }

    mutating func create(_ type: ItemRecord.ItemType, in parent: UInt64, named name: [UInt8], mode: UInt32, uid: UInt32,
                         gid: UInt32, rdev: UInt64, target: [UInt8]) throws -> UInt64 {
        guard !readOnly else { throw VaultError.readOnly }
        try checkName(name)
        guard try folder(parent)[name] == nil else { throw VaultError.exists }
        if type == .symlink {
            guard (1...Format.maxSymlinkLength).contains(target.count), !target.contains(0) else { throw VaultError.tooLarge("link target") }
        }
        let id = nextItemID
        nextItemID += 1
        let now = clock.now()
        var record = ItemRecord(type: type, mode: mode & 0o7777, uid: uid, gid: gid, rdev: rdev, atime: now, mtime: now, ctime: now,
                                size: type == .symlink ? UInt64(target.count) : 0,
                                links: [ItemRecord.Link(parentID: parent, name: name)], target: type == .symlink ? target : [])
        var item = Item(record: record)
        if type == .file { item.key = try arena.allocateRandom(using: random) }
        record.itemKey = []
        items[id] = item
        children[parent]![name] = id
        if type == .folder { children[id] = [:] }
        touchFolder(parent, now)
        dirtyItems.insert(id)
        return id
    }

    /// A hard link: another name for an item that is not a folder.
    mutating func link(_ id: UInt64, into parent: UInt64, named name: [UInt8]) throws {
        guard !readOnly else { throw VaultError.readOnly }
        try checkName(name)
        let item = try self.item(id)
        guard !item.isFolder else { throw VaultError.isAFolder }
        guard try folder(parent)[name] == nil else { throw VaultError.exists }
        guard item.record.links.count < Self.maximumLinks else { throw VaultError.tooLarge("too many links") }
        var grown = item.record
        grown.links.append(ItemRecord.Link(parentID: parent, name: name))
        try checkRecordSize(grown)
        let now = clock.now()
        items[id]!.record.links.append(ItemRecord.Link(parentID: parent, name: name))
        items[id]!.record.ctime = now
        children[parent]![name] = id
        touchFolder(parent, now)
        dirtyItems.insert(id)
    }

    /// Removes a name. A folder must be empty. The item goes when its last name does and no
    /// open file holds it; its key goes with it (R-DEL-1).
    mutating func unlink(_ parent: UInt64, _ name: [UInt8], folder expectFolder: Bool) throws {
        guard !readOnly else { throw VaultError.readOnly }
        let id = try lookup(parent, name)
        let item = items[id]!
        if expectFolder {
            guard item.isFolder else { throw VaultError.notAFolder }
            guard children[id]!.isEmpty else { throw VaultError.notEmpty }
        } else if item.isFolder {
            throw VaultError.isAFolder
        }
        let now = clock.now()
        removeLink(id, parent, name)
        items[id]?.record.ctime = now
        touchFolder(parent, now)
    }

    /// rename(2) in one step, so that a commit never sees the target gone and the source not
    /// yet moved (editors save by rename).
    mutating func rename(_ parent: UInt64, _ name: [UInt8], to newParent: UInt64, _ newName: [UInt8],
                         replace: Bool = true, exchange: Bool = false) throws {
        guard !readOnly else { throw VaultError.readOnly }
        try checkName(newName)
        let id = try lookup(parent, name)
        _ = try folder(newParent)
        let moving = items[id]!
        if moving.isFolder {
            var ancestor: UInt64? = newParent
            while let current = ancestor {
                if current == id { throw VaultError.invalidMove }
                ancestor = items[current]?.record.links.first?.parentID
            }
        }
        let now = clock.now()
        if let existing = children[newParent]![newName] {
            if existing == id { return }
            guard replace else { throw VaultError.exists }
            let target = items[existing]!
            if moving.isFolder {
                guard target.isFolder else { throw VaultError.notAFolder }
                guard children[existing]!.isEmpty else { throw VaultError.notEmpty }
            } else if target.isFolder {
                throw VaultError.isAFolder
            }
            removeLink(existing, newParent, newName)
            items[existing]?.record.ctime = now
        }
        let index = items[id]!.record.links.firstIndex(of: ItemRecord.Link(parentID: parent, name: name))!
        items[id]!.record.links[index] = ItemRecord.Link(parentID: newParent, name: newName)
        items[id]!.record.ctime = now
        children[parent]![name] = nil
        children[newParent]![newName] = id
        touchFolder(parent, now)
        touchFolder(newParent, now)
        dirtyItems.insert(id)
    }

    /// Changes attributes; nil leaves one as it is. ctime follows every change.
    mutating func setAttributes(_ id: UInt64, mode: UInt32? = nil, uid: UInt32? = nil, gid: UInt32? = nil,
                                atime: Int64? = nil, mtime: Int64? = nil) throws {
        guard !readOnly else { throw VaultError.readOnly }
        _ = try item(id)
        if let mode { items[id]!.record.mode = mode & 0o7777 }
        if let uid { items[id]!.record.uid = uid }
        if let gid { items[id]!.record.gid = gid }
        if let atime { items[id]!.record.atime = atime }
        if let mtime { items[id]!.record.mtime = mtime }
        items[id]!.record.ctime = clock.now()
        dirtyItems.insert(id)
    }

    /// Content changes move mtime and ctime.
    mutating func touchContent(_ id: UInt64) {
        let now = clock.now()
        items[id]?.record.mtime = now
        items[id]?.record.ctime = now
    }

    mutating func setExtendedAttribute(_ id: UInt64, _ name: [UInt8], _ value: [UInt8]?, create: Bool = false,
                                       replace: Bool = false) throws {
        guard !readOnly else { throw VaultError.readOnly }
        _ = try item(id)
        guard !name.isEmpty, name.count <= Format.maxNameLength, !name.contains(0) else { throw VaultError.tooLarge("attribute name") }
        let index = items[id]!.record.xattrs.firstIndex { $0.name == name }
        if let value {
            if create && index != nil { throw VaultError.exists }
            if replace && index == nil { throw VaultError.notFound }
            // The attribute being replaced does not count: its new value takes its place.
            let current = items[id]!.record.xattrs.reduce(0) { $0 + ($1.name == name ? 0 : $1.name.count + $1.value.count + 5) }
            guard current + name.count + value.count + 5 <= Self.maximumAttributeBytes else { throw VaultError.tooLarge("extended attributes") }
            var grown = items[id]!.record
            if let index { grown.xattrs[index].value = value } else { grown.xattrs.append((name, value)) }
            try checkRecordSize(grown)
            items[id]!.record = grown
        } else {
            guard let index else { throw VaultError.notFound }
            items[id]!.record.xattrs.remove(at: index)
        }
        items[id]!.record.ctime = clock.now()
        dirtyItems.insert(id)
    }

    /// An open file keeps its item alive after its last name is gone.
    mutating func hold(_ id: UInt64) { items[id]?.holds += 1 }

    mutating func release(_ id: UInt64) {
        guard items[id] != nil else { return }
        items[id]!.holds -= 1
        deleteIfUnused(id)
    }

    static let maximumLinks = 1000
    static let maximumAttributeBytes = 32 << 10

    /// A record must fit an index page with room to spare (`maximumRecordSize`): links and
    /// attributes, each limited on its own, could together outgrow a page, which no commit could
    /// then write. (A rename changes one name by at most 254 bytes, far within the spare room.)
    private func checkRecordSize(_ record: ItemRecord) throws {
        // In memory a file's record has no item key: count its 32 bytes too.
        guard record.encode().count + Format.keySize <= Self.maximumRecordSize else {
            throw VaultError.tooLarge("the item's names and attributes")
        }
    }

    private func checkName(_ name: [UInt8]) throws {
        if name.count > Format.maxNameLength { throw VaultError.tooLarge("name longer than 255 bytes") }
        do { try ItemRecord.validateName(name) } catch { throw VaultError.invalidMove }
    }

    private mutating func touchFolder(_ id: UInt64, _ now: Int64) {
        items[id]?.record.mtime = now
        items[id]?.record.ctime = now
        dirtyItems.insert(id)
    }

    private mutating func removeLink(_ id: UInt64, _ parent: UInt64, _ name: [UInt8]) {
        items[id]!.record.links.removeAll { $0.parentID == parent && $0.name == name }
        children[parent]![name] = nil
        dirtyItems.insert(id)
        deleteIfUnused(id)
    }

    /// Drops an item with no names and no holds: its files are freed and its key erased.
    private mutating func deleteIfUnused(_ id: UInt64) {
        guard let item = items[id], item.record.links.isEmpty, item.holds <= 0, id != Format.rootItemID else { return }
        for ref in item.chunks.values { allocator.release(ref.fileNumber) }
        if let member = item.packedMember { releaseMember(id, member) }
        for segment in item.segmentIndexes { removedKeys.append(.segment(id, segment)) }
        removedKeys.append(.item(id))
        cache.removeItem(id)
        dropFlights(id)
        runs[id] = nil
        readEnds[id] = nil
        if let slot = item.key { arena.free(slot) }
        items[id] = nil
        children[id] = nil
        dirtyItems.insert(id)
    }
}
