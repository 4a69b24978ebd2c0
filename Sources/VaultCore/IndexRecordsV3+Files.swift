import VaultFormat

/// Index 3's file blocks and member lists kept from the files that changed (issue 17, step 6),
/// as the folder entries are from the names: a commit looks at the items it changed and at the
/// index's own files, not at every item.
///
/// A bit outside those stays as it was, which holds because a chunk file belongs to one item
/// (a file an item drops is freed, and no file freed since the last commit is handed out
/// before the next), a pack's items are its member list, and a page's file is no item's.
extension IndexRecordsV3 {
    /// What the file blocks were derived with, besides the items: the index's own files, which
    /// hold no bit, and what the root holds itself (`VaultState.rootHeldFiles`). When the latter
    /// changes (a sync's pins, a share's files), the blocks are derived whole.
    struct FilesBasis: Equatable {
        var indexFiles: Set<UInt64>
        var rootHeld: Set<UInt64>
    }

    /// The file blocks and member lists after the items of `changed` (each with the files these
    /// records held for it) and the index's own files (from `before`'s to `now`'s) changed, the
    /// rest as they are. Nil when a pack's list and its items disagree: then they are derived
    /// whole. Throws as `fileRecords` does for a pack with members whose bit is clear.
    func followingFiles(_ tree: ItemTree, changed: [UInt64: ItemTree.ItemFiles], numbers: Numbers,
                        before: FilesBasis, now: FilesBasis) throws -> (blocks: [UInt32: FileBlock], lists: [UInt64: PackMembers])? {
        var blocks = self.blocks, lists = self.lists
        let owned = numbers.blocks
        for block in blocks.keys where !owned.contains(block) { blocks[block] = nil }
        for block in owned where blocks[block] == nil {
            blocks[block] = FileBlock(held: [UInt8](repeating: 0, count: FileBlock.heldSize), packs: [])
        }
        // Raw FileRefs whose bit may differ, those the changed items reference, their packs.
        var candidates = before.indexFiles.symmetricDifference(now.indexFiles)
        var referenced = Set<UInt64>(), packs = Set<UInt64>()
        func own(_ raw: UInt64) -> UInt64? {
            let file = FileRef(raw: raw)
            return file.device == numbers.device ? file.number : nil
        }
        for (id, old) in changed {
            let current = tree.recordedFiles(id)
            candidates.formUnion(old.chunks)
            candidates.formUnion(current.chunks)
            referenced.formUnion(current.chunks)
            if let pack = old.pack.flatMap(own), var list = lists[pack]?.itemIDs, let index = list.firstIndex(of: id) {
                list.remove(at: index)
                lists[pack] = PackMembers(list)
                packs.insert(pack)
            }
            if let raw = current.pack, let pack = own(raw) {
                var list = lists[pack]?.itemIDs ?? []
                let at = list.firstIndex { $0 >= id } ?? list.count
                if at == list.count || list[at] != id { list.insert(id, at: at) }
                lists[pack] = PackMembers(list)
                packs.insert(pack)
            }
        }
        for pack in packs {
            let (block, index) = (UInt32(pack / IndexKeyV3.numbersPerBlock), UInt16(pack % IndexKeyV3.numbersPerBlock))
            candidates.insert(FileRef(device: numbers.device, number: pack).raw)
            blocks[block]?.packs.removeAll { $0.index == index }
            guard let items = lists[pack]?.itemIDs, !items.isEmpty else {
                lists[pack] = nil
                continue
            }
            var live = 0, end = 0
            for id in items {
                guard tree.isRecorded(id), let member = tree.items[id]?.packedMember, own(member.fileNumber) == pack else { return nil }
                live += Int(member.sealedLength)
                end = max(end, Int(member.offset) + Int(member.sealedLength))
            }
            guard blocks[block] != nil else { return nil }
            let entry = FileBlock.Pack(index: index, liveBytes: UInt32(live), reservedEnd: UInt32(end))
            let at = blocks[block]!.packs.firstIndex { $0.index > index } ?? blocks[block]!.packs.count
            blocks[block]!.packs.insert(entry, at: at)
        }
        for raw in candidates {
            guard let number = own(raw) else { continue }
            let (block, index) = (UInt32(number / IndexKeyV3.numbersPerBlock), Int(number % IndexKeyV3.numbersPerBlock))
            guard blocks[block] != nil else { continue }
            let held = numbers.isData(number) && !now.indexFiles.contains(raw)
                && (referenced.contains(raw) || lists[number] != nil || now.rootHeld.contains(raw))
            if held { blocks[block]!.held[index >> 3] |= 1 << (index & 7) } else { blocks[block]!.held[index >> 3] &= ~(1 << (index & 7)) }
        }
        for pack in packs where lists[pack] != nil {
            let (block, index) = (UInt32(pack / IndexKeyV3.numbersPerBlock), Int(pack % IndexKeyV3.numbersPerBlock))
            guard blocks[block]?.isHeld(index) == true else {
                throw VaultError.damagedIndex("pack \(FileRef(device: numbers.device, number: pack)) holds members but is not held")
            }
        }
        return (blocks, lists)
    }
}
