import VaultCrypto
import VaultFormat

/// The item tree: items with their records, the folders they form, and what changed since the
/// last commit (the records a commit writes; what sync will merge). Tree rules that keep the
/// index valid (no cycles, no duplicate names, folders with one name, records that fit a page)
/// are enforced here, so no sequence of calls can make an index that the next open would reject.
///
/// No storage, no keys: an item deleted here is handed back to the caller, which frees its files
/// and its key.
struct ItemTree {
    private(set) var items: [UInt64: Item]
    /// Folder → name → item, derived from the items' links.
    private(set) var children: [UInt64: [[UInt8]: UInt64]]
    /// Items whose records must be written at the next commit (also deleted ones).
    var dirtyItems: Set<UInt64> = []
    /// Chunk-map segments changed since the last commit, by item.
    var dirtySegments: [UInt64: Set<Int>] = [:]
    /// Record keys of items that are gone.
    var removedKeys: [RecordKey] = []
    /// What changed since index 3's derived records last followed the tree: names added or
    /// removed and items made or unnamed (folder entries and summaries), and the files each
    /// changed item held then (file blocks and member lists); nil for a tree built whole (an
    /// open, a merge), whose records are derived again from every item.
    var recordsJournal: RecordsJournal?
    private(set) var nextItemID: UInt64
    /// Whether every item of the index is here. A tree held in part (pages on demand, issue 17
    /// step 6c) has the items of the leaves loaded (`VaultState.fault`): operations on names
    /// and records need the items they touch loaded, and whatever reads every item
    /// (`allItems`) needs the whole tree (`VaultState.loadWholeIndex`).
    private(set) var isWhole = true
    /// Items known to be folders from their parents' entries (§15.3) before their own records
    /// are loaded: a folder's link count counts its subfolders. An ID never changes type.
    private var entryFolders: Set<UInt64> = []
    /// Holds of items evicted while the kernel knew them or a file was open (`evict`): they
    /// come back with the item.
    private var evictedHolds: [UInt64: Int] = [:]

    struct RecordsJournal: Equatable {
        /// The records it applies to (`IndexThree.journalToken`): any other are derived whole.
        let base: UInt64
        var links: Set<ItemRecord.Link> = []
        /// Items made, and items that lost their last name: a folder's summary comes or goes.
        var items: Set<UInt64> = []
        /// Each item whose files or recorded state changed: the files the records held for it.
        var files: [UInt64: ItemFiles] = [:]

        init(base: UInt64) { self.base = base }
    }

    /// The raw FileRefs a root holds for an item: its chunks' and its pack's (none for an item
    /// the root does not record).
    struct ItemFiles: Equatable {
        var chunks: [UInt64] = []
        var pack: UInt64?
    }

    func recordedFiles(_ id: UInt64) -> ItemFiles {
        guard isRecorded(id), let item = items[id] else { return ItemFiles() }
        return ItemFiles(chunks: item.chunks.values.map(\.fileNumber), pack: item.packedMember?.fileNumber)
    }

    static let maximumLinks = 1000
    static let maximumAttributeBytes = 32 << 10
    /// Largest record a page can hold with room to spare; operations refuse to grow past it.
    static let maximumRecordSize = 64 << 10

    /// A new vault's tree: its root folder only.
    /// `nextItemID`: format 2 starts at the device's item prefix (docs/FORMAT.md §13.4).
    init(root: ItemRecord, nextItemID: UInt64 = Format.rootItemID + 1) {
        items = [Format.rootItemID: Item(record: root)]
        children = [Format.rootItemID: [:]]
        self.nextItemID = nextItemID
    }

    /// A tree read from an index (`IndexContents` has checked it).
    init(items: [UInt64: Item], children: [UInt64: [[UInt8]: UInt64]], nextItemID: UInt64) {
        self.items = items
        self.children = children
        self.nextItemID = nextItemID
    }

    var hasChanges: Bool { !dirtyItems.isEmpty || !removedKeys.isEmpty }

    /// Every item: only in a whole tree (a path that reads every item loads them all first).
    var allItems: [UInt64: Item] {
        precondition(isWhole, "every item read from a tree held in part")
        return items
    }

    /// A tree held in part: the items loaded with the open (`adopt` adds more).
    mutating func holdInPart() { isWhole = false }

    /// The items of leaves just loaded, none of them here yet, and the name tables of the
    /// folders among them, read from their entries (`subfolders`: the entries' folders).
    /// `whole`: no leaf is left unloaded.
    mutating func adopt(_ loaded: [UInt64: Item], folders: [UInt64: [[UInt8]: UInt64]], subfolders: Set<UInt64>, whole: Bool) {
        items.merge(loaded) { _, _ in preconditionFailure("an item loaded twice") }
        for (id, holds) in evictedHolds where items[id] != nil {
            items[id]!.holds = holds
            evictedHolds[id] = nil
        }
        children.merge(folders) { _, _ in preconditionFailure("a folder's names loaded twice") }
        entryFolders.formUnion(subfolders)
        if whole {
            isWhole = true
            entryFolders = []
        }
    }

    func item(_ id: UInt64) throws -> Item {
        guard let item = items[id] else { throw VaultError.notFound }
        return item
    }

    func file(_ id: UInt64) throws -> Item {
        guard let item = items[id] else { throw VaultError.notFound }
        guard item.isFile else { throw VaultError.wrongType }
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

    /// Links of a folder: 2, plus one per subfolder (the loaded folders are exactly the keys of
    /// `children`; those not loaded are known from their entries).
    func linkCount(_ id: UInt64, _ item: Item) -> Int {
        item.isFolder ? 2 + (children[id]?.values.filter { children[$0] != nil || entryFolders.contains($0) }.count ?? 0) : item.record.links.count
    }

    // MARK: Names

    /// `makeKey` gives a regular file its item key, once every check has passed.
    mutating func create(_ type: ItemRecord.ItemType, in parent: UInt64, named name: [UInt8], mode: UInt32, uid: UInt32,
                         gid: UInt32, rdev: UInt64, target: [UInt8], now: Int64,
                         makeKey: () throws -> SecretArena.Slot?) throws -> UInt64 {
        try Self.checkName(name)
        guard try folder(parent)[name] == nil else { throw VaultError.exists }
        if type == .symlink {
            guard (1...Format.maxSymlinkLength).contains(target.count), !target.contains(0) else { throw VaultError.tooLarge("link target") }
        }
        // Format 2: the low half of an ID is the device's counter (docs/FORMAT.md §13.4).
        guard nextItemID & 0xffff_ffff != 0xffff_ffff else { throw VaultError.tooLarge("item count") }
        let id = nextItemID
        nextItemID += 1
        noteFiles(id)
        let record = ItemRecord(type: type, mode: mode & 0o7777, uid: uid, gid: gid, rdev: rdev, atime: now, mtime: now, ctime: now,
                                size: type == .symlink ? UInt64(target.count) : 0,
                                links: [ItemRecord.Link(parentID: parent, name: name)], target: type == .symlink ? target : [])
        var item = Item(record: record)
        if type == .file { item.key = try makeKey() }
        items[id] = item
        children[parent]![name] = id
        if type == .folder { children[id] = [:] }
        touchFolder(parent, now)
        dirtyItems.insert(id)
        recordsJournal?.links.insert(ItemRecord.Link(parentID: parent, name: name))
        recordsJournal?.items.insert(id)
        return id
    }

    /// A hard link: another name for an item that is not a folder.
    mutating func link(_ id: UInt64, into parent: UInt64, named name: [UInt8], now: Int64) throws {
        try Self.checkName(name)
        let item = try self.item(id)
        guard !item.isFolder else { throw VaultError.isAFolder }
        guard try folder(parent)[name] == nil else { throw VaultError.exists }
        guard item.record.links.count < Self.maximumLinks else { throw VaultError.tooLarge("too many links") }
        var grown = item.record
        grown.links.append(ItemRecord.Link(parentID: parent, name: name))
        try Self.checkRecordSize(grown)
        noteFiles(id)
        items[id]!.record.links.append(ItemRecord.Link(parentID: parent, name: name))
        items[id]!.record.ctime = now
        children[parent]![name] = id
        touchFolder(parent, now)
        dirtyItems.insert(id)
        recordsJournal?.links.insert(ItemRecord.Link(parentID: parent, name: name))
    }

    /// Removes a name. A folder must be empty. Returns the item if it went with its last name
    /// (no open file holds it): the caller frees its files and key (R-DEL-1).
    mutating func unlink(_ parent: UInt64, _ name: [UInt8], folder expectFolder: Bool, now: Int64) throws -> Deleted? {
        let id = try lookup(parent, name)
        let item = items[id]!
        if expectFolder {
            guard item.isFolder else { throw VaultError.notAFolder }
            guard children[id]!.isEmpty else { throw VaultError.notEmpty }
        } else if item.isFolder {
            throw VaultError.isAFolder
        }
        let deleted = removeLink(id, parent, name)
        items[id]?.record.ctime = now
        touchFolder(parent, now)
        return deleted
    }

    /// rename(2) in one step, so that a commit never sees the target gone and the source not
    /// yet moved (editors save by rename). Returns a replaced target that went with its name.
    mutating func rename(_ parent: UInt64, _ name: [UInt8], to newParent: UInt64, _ newName: [UInt8],
                         replace: Bool, now: Int64) throws -> Deleted? {
        try Self.checkName(newName)
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
        var deleted: Deleted?
        if let existing = children[newParent]![newName] {
            if existing == id { return nil }
            guard replace else { throw VaultError.exists }
            let target = items[existing]!
            if moving.isFolder {
                guard target.isFolder else { throw VaultError.notAFolder }
                guard children[existing]!.isEmpty else { throw VaultError.notEmpty }
            } else if target.isFolder {
                throw VaultError.isAFolder
            }
            deleted = removeLink(existing, newParent, newName)
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
        recordsJournal?.links.formUnion([ItemRecord.Link(parentID: parent, name: name), ItemRecord.Link(parentID: newParent, name: newName)])
        return deleted
    }

    /// An open file keeps its item alive after its last name is gone.
    mutating func hold(_ id: UInt64) { items[id]?.holds += 1 }

    /// Returns the item if this was the last thing keeping it.
    mutating func release(_ id: UInt64) -> Deleted? {
        guard items[id] != nil else { return nil }
        items[id]!.holds -= 1
        return deleteIfUnused(id)
    }

    // MARK: Records

    /// Changes attributes; nil leaves one as it is. ctime follows every change.
    mutating func setAttributes(_ id: UInt64, mode: UInt32?, uid: UInt32?, gid: UInt32?, atime: Int64?, mtime: Int64?,
                                now: Int64) throws {
        _ = try item(id)
        if let mode { items[id]!.record.mode = mode & 0o7777 }
        if let uid { items[id]!.record.uid = uid }
        if let gid { items[id]!.record.gid = gid }
        if let atime { items[id]!.record.atime = atime }
        if let mtime { items[id]!.record.mtime = mtime }
        items[id]!.record.ctime = now
        dirtyItems.insert(id)
    }

    mutating func setExtendedAttribute(_ id: UInt64, _ name: [UInt8], _ value: [UInt8]?, create: Bool, replace: Bool,
                                       now: Int64) throws {
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
            try Self.checkRecordSize(grown)
            items[id]!.record = grown
        } else {
            guard let index else { throw VaultError.notFound }
            items[id]!.record.xattrs.remove(at: index)
        }
        items[id]!.record.ctime = now
        dirtyItems.insert(id)
    }

    /// Applies `drop` to item `id` (a folder keeps everything: the kernel drops nothing from one);
    /// true if that changed it. Costs a lookup when there is nothing to drop, as for almost
    /// every file.
    @discardableResult
    mutating func dropPrivileges(_ id: UInt64, _ drop: PrivilegeDrop, now: Int64) -> Bool {
        guard let record = items[id]?.record, record.type != .folder,
              record.mode & (PrivilegeDrop.setUserID | PrivilegeDrop.setGroupID) != 0 || !record.xattrs.isEmpty else { return false }
        var changed = false
        if let mode = drop.mode(after: record.mode, gid: record.gid) {
            items[id]!.record.mode = mode
            changed = true
        }
        if let index = record.xattrs.firstIndex(where: { $0.name == PrivilegeDrop.capabilityAttribute }) {
            items[id]!.record.xattrs.remove(at: index)
            changed = true
        }
        guard changed else { return false }
        items[id]!.record.ctime = now
        dirtyItems.insert(id)
        return true
    }

    /// Content changes move mtime and ctime.
    mutating func touchContent(_ id: UInt64, now: Int64) {
        items[id]?.record.mtime = now
        items[id]?.record.ctime = now
    }

    // MARK: Contents of files

    /// Changes a file's size or layout; the record is written at the next commit.
    mutating func update(_ id: UInt64, _ body: (inout ItemRecord) -> Void) {
        noteFiles(id)
        body(&items[id]!.record)
        dirtyItems.insert(id)
    }

    /// Sets (or with nil removes) where chunk `index` of `id` is stored; returns where it was.
    @discardableResult
    mutating func setChunk(_ id: UInt64, _ index: Int, _ ref: StoredRef?) -> StoredRef? {
        noteFiles(id)
        let old = items[id]!.chunks[index]
        items[id]!.chunks[index] = ref
        dirtySegments[id, default: []].insert(ChunkOffsets.segment(ofChunk: index))
        dirtyItems.insert(id)
        return old
    }

    /// Forgets every chunk of `id`; returns them.
    mutating func removeAllChunks(_ id: UInt64) -> [Int: StoredRef] {
        noteFiles(id)
        let chunks = items[id]!.chunks
        for index in chunks.keys { dirtySegments[id, default: []].insert(ChunkOffsets.segment(ofChunk: index)) }
        items[id]!.chunks = [:]
        dirtyItems.insert(id)
        return chunks
    }

    /// Format 2: a packed member's key; returns the one it replaces (its owner frees it).
    mutating func setMemberKey(_ id: UInt64, _ key: SecretArena.Slot?) -> SecretArena.Slot? {
        let old = items[id]!.memberKey
        items[id]!.memberKey = key
        return old
    }

    /// An upgraded item's format-1 key, once nothing of it needs the key; returns it (its owner
    /// frees it).
    mutating func dropItemKey(_ id: UInt64) -> SecretArena.Slot? {
        let old = items[id]!.key
        items[id]!.key = nil
        dirtyItems.insert(id)
        return old
    }

    /// Format 2: every item this commit writes gets its next version (docs/FORMAT.md §13.8).
    mutating func countVersions(device: UInt16) {
        for id in dirtyItems where items[id] != nil {
            items[id]!.record.version += 1
            items[id]!.record.changedBy = device
        }
    }

    /// Every item is written again at the next commit, with its next version (an upgrade).
    mutating func markAllDirty() { dirtyItems.formUnion(allItems.keys) }

    /// After a commit wrote every change.
    mutating func didCommit() {
        dirtyItems = []
        dirtySegments = [:]
    }

    /// Items of leaves being unloaded (pages on demand, eviction), each with a name and no
    /// change since the last commit: the tree is in part afterwards, their holds kept for
    /// their return. Returns them: their keys are the caller's to free.
    mutating func evict(_ ids: [UInt64]) -> [Item] {
        isWhole = false
        var gone: [Item] = []
        for id in ids {
            guard let item = items.removeValue(forKey: id) else { continue }
            precondition(!item.record.links.isEmpty && !dirtyItems.contains(id), "an item evicted with a change or without a name")
            if item.holds != 0 { evictedHolds[id] = item.holds }
            if item.isFolder {
                children[id] = nil
                entryFolders.insert(id)
            }
            gone.append(item)
        }
        return gone
    }

    mutating func removeAll() {
        items = [:]
        evictedHolds = [:]
        children = [:]
        entryFolders = []
        recordsJournal = nil
    }

    // MARK: Rules

    /// An item gone from the tree: its files and key are the caller's to free.
    typealias Deleted = (id: UInt64, item: Item)

    /// A record must fit an index page with room to spare (`maximumRecordSize`): links and
    /// attributes, each limited on its own, could together outgrow a page, which no commit could
    /// then write. (A rename changes one name by at most 254 bytes, far within the spare room.)
    private static func checkRecordSize(_ record: ItemRecord) throws {
        // In memory a file's record has no item key: count its 32 bytes too.
        guard record.encode().count + Format.keySize <= maximumRecordSize else {
            throw VaultError.tooLarge("the item's names and attributes")
        }
    }

    private static func checkName(_ name: [UInt8]) throws {
        if name.count > Format.maxNameLength { throw VaultError.tooLarge("name longer than 255 bytes") }
        do { try ItemRecord.validateName(name) } catch { throw VaultError.invalidMove }
    }

    /// Before an item's files or names change: what the records hold for it, once per journal.
    private mutating func noteFiles(_ id: UInt64) {
        guard recordsJournal != nil, recordsJournal!.files[id] == nil else { return }
        recordsJournal!.files[id] = recordedFiles(id)
    }

    private mutating func touchFolder(_ id: UInt64, _ now: Int64) {
        items[id]?.record.mtime = now
        items[id]?.record.ctime = now
        dirtyItems.insert(id)
    }

    private mutating func removeLink(_ id: UInt64, _ parent: UInt64, _ name: [UInt8]) -> Deleted? {
        noteFiles(id)
        items[id]!.record.links.removeAll { $0.parentID == parent && $0.name == name }
        children[parent]![name] = nil
        dirtyItems.insert(id)
        recordsJournal?.links.insert(ItemRecord.Link(parentID: parent, name: name))
        if items[id]!.record.links.isEmpty { recordsJournal?.items.insert(id) }
        return deleteIfUnused(id)
    }

    /// Drops an item with no names and no holds, with its records.
    private mutating func deleteIfUnused(_ id: UInt64) -> Deleted? {
        guard let item = items[id], item.record.links.isEmpty, item.holds <= 0, id != Format.rootItemID else { return nil }
        noteFiles(id)
        for segment in item.segmentIndexes { removedKeys.append(.segment(id, segment)) }
        removedKeys.append(.item(id))
        items[id] = nil
        children[id] = nil
        dirtyItems.insert(id)
        return (id, item)
    }
}
