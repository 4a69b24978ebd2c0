import VaultCrypto
import VaultFormat

/// The state's side of index version 3 (docs/FORMAT.md §15): what its file blocks hold, and
/// the records derived from the tree for it.
extension VaultState {
    /// Every raw FileRef the writer's file blocks hold (§15.4): the chunks and members of the
    /// items the root records, its special files, a names move's slot files, and what the sync
    /// base pins; not the index's own files (pages at every level, sync-base pieces), which the
    /// root and its interior pages list, so that writing pages never changes a block.
    /// The pins are those the root's sync base lists (`SyncBasePlans.recordedPins`), and the
    /// index's files are left out even when pinned (a sync pins the pages it publishes).
    var mappedFiles: Set<UInt64> { gathered.held }

    /// `mappedFiles` and what the device's packs hold, from one pass over the items.
    private var gathered: (numbers: IndexRecordsV3.Numbers, held: Set<UInt64>, packs: IndexRecordsV3.PackContents) {
        let numbers = IndexRecordsV3.Numbers(writer.allocator)
        let (files, packs) = IndexRecordsV3.itemFilesAndPacks(tree, numbers)
        return (numbers, rootHeldFiles.union(files).subtracting(indexFiles), packs)
    }

    /// What the root holds itself, besides its items' chunks and members (§15.4): the sync
    /// base's pins, the special files, a names move's slot files; the index's files among them.
    var rootHeldFiles: Set<UInt64> {
        var held = syncBases.recordedPins ?? writer.allocator.pinnedNumbers
        // Pins not read yet (an open's check): the set bits stand for them, so every referenced
        // file still needs its bit, and a set bit nothing references may be a pin. No commit
        // derives blocks from this (`writeIndexPages` reads the pins first).
        if syncBases.pinsUnread, let three = committer.indexThree {
            held.formUnion(three.records.heldFiles(device: FileRef(raw: writer.allocator.base).device))
        }
        if let formatTwo = committer.formatTwo {
            held.formUnion(formatTwo.specialFiles.map(\.file.raw))
            if let value = formatTwo.extensions.first(where: { $0.tag == NamesMove.extensionTag })?.value,
               let move = try? NamesMove.decode(value) {
                held.formUnion(move.slotFiles.map(\.raw))
                move.wipeKeys()
            }
        }
        return held
    }

    /// The index's own files: its pages and interior pages, and its sync base's pieces.
    var indexFiles: Set<UInt64> {
        let files = committer.pageTable.pages.compactMap { $0.ref?.fileNumber } + committer.pageTable.parentRefs.map(\.fileNumber)
        let pieces = (try? VaultState.syncBasePieceFiles(committer.formatTwo?.extensions ?? [])) ?? []
        return Set(files + pieces)
    }

    /// §15.1's conversion, in a commit that writes anyway (opening changes nothing, R-VLT-2):
    /// a fresh EHK, and every page written again as version 3 with the derived records; the
    /// root of version 3 is the commit point, so a cut before it leaves index 2 as it was.
    mutating func prepareConversion() throws {
        guard committer.convertsToIndexThree, committer.indexThree == nil, committer.formatTwo != nil else { return }
        committer.indexThree = try IndexThree(entryHashKey: SecretBytes.random(count: Format.keySize, using: session.random))
        committer.rewriteAllPages()
        committer.convertsToIndexThree = false
        // Due until written: a failed commit whose pages went out leaves no page dirty, and an
        // upgrade changes no record that would make the next commit write the root.
        committer.formatTwo?.rootDue = true
    }

    /// `dotsafe upgrade` (§15.1): the conversion asked for whatever the policy says, written by
    /// the next commit (every page again, then the root of version 3). A format-1 vault is
    /// upgraded by the same commit; one that cannot be (`startUpgrade`) cannot convert either.
    mutating func requestConversion() throws {
        guard committer.formatTwo != nil || committer.upgrade != nil else {
            throw VaultError.tooLarge("this format-1 vault cannot become format 2, so neither index version 3")
        }
        committer.convertsToIndexThree = true
        committer.rewriteAllPages()
    }

    /// §15.3–§15.4's records of the state, under the entry hash `entryHash`.
    func derivedRecords(entryHash: IndexRecordsV3.EntryHash) throws -> IndexRecordsV3 {
        let (numbers, held, packs) = gathered
        return try IndexRecordsV3.derive(tree, numbers: numbers, held: held, packs: packs, entryHash: entryHash)
    }

    /// §15.6's rules of `records` against the state.
    func checkRecords(_ records: IndexRecordsV3, entryHash: IndexRecordsV3.EntryHash) throws {
        let (numbers, held, packs) = gathered
        try records.check(against: tree, numbers: numbers, held: held, packs: packs, entryHash: entryHash)
    }

    /// Writes the changed pages (`encode` gives an item's or segment's record). Index 3: the
    /// file blocks are derived before the pages are placed, so a pinned number that stops being
    /// a page of the root (replaced by this commit) gets its bit only from a second pass, and a
    /// sync's commit pins the pages it writes (§15.4): the blocks are derived again until they
    /// hold what the root written holds, which the pages of a pass, new and unpinned, never change.
    /// The records follow the tree's journal when it applies to them (the items it changed),
    /// else every item once.
    mutating func writeIndexPages(encode: @escaping (RecordKey, ItemTree, SecretArena, StorageFormat) -> [UInt8]) throws {
        try readPinsIfUnread()
        // The tree stays as it is while the pages are placed: what its items hold, at most once.
        var journal: ItemTree.RecordsJournal?, whole: (files: Set<UInt64>, packs: IndexRecordsV3.PackContents)?
        for pass in 1... {
            // A sync's commit records these pins (`writeSyncBase`): its bits are theirs.
            if let plan = syncBases.pending { syncBases.recordedPins = ownReferencedFiles.union(plan.pinned) }
            let numbers = IndexRecordsV3.Numbers(writer.allocator), device = numbers.device
            if let three = committer.indexThree {
                // The names do not depend on where pages go: once.
                if pass == 1 {
                    journal = three.applicable(tree.recordsJournal)
                    // Names derived whole need every item.
                    if journal == nil { try loadWholeIndex() }
                    statistics.entryHashes += try committer.updateNameRecords(tree, journal: journal)
                }
                let basis = IndexRecordsV3.FilesBasis(indexFiles: indexFiles, rootHeld: rootHeldFiles)
                // Later passes only moved pages: no item changed since the first.
                let changed = pass == 1 ? journal?.files : [:]
                var files: (blocks: [UInt32: FileBlock], lists: [UInt64: PackMembers])?
                if let changed, let before = three.filesBasis, before.rootHeld == basis.rootHeld {
                    files = try three.records.followingFiles(tree, changed: changed, numbers: numbers, before: before, now: basis)
                    if files != nil { statistics.fileRecordItems += changed.count }
                }
                if files == nil {
                    if whole == nil {
                        try loadWholeIndex()
                        whole = IndexRecordsV3.itemFilesAndPacks(tree, numbers)
                        statistics.fileRecordItems += tree.allItems.count
                    }
                    files = try IndexRecordsV3.fileRecords(whole!.packs, numbers: numbers,
                                                           held: basis.rootHeld.union(whole!.files).subtracting(basis.indexFiles))
                }
                let wrote = committer.useFileRecords(files!.blocks, files!.lists, device: device, basis: basis)
                // The records follow the tree now: what changes from here goes in a new journal.
                if pass == 1 { tree.recordsJournal = committer.indexThree?.startJournal() }
                guard wrote || pass == 1 else { return }
                guard pass <= 4 else { throw VaultError.damagedIndex("index 3: the file blocks do not settle") }
            } else if pass > 1 {
                return
            }
            let tree = self.tree, arena = session.arena, format = committer.format, three = committer.indexThree
            statistics.pageWrites += try committer.writeDirtyPages(writer: &writer, arena: arena, fanOut: indexFanOut) { key in
                three?.value(key, device: device) ?? encode(key, tree, arena, format)
            }
        }
    }
}
