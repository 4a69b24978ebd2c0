import VaultFormat

/// Seeds of the index-3 targets (docs/FORMAT.md §15): the fuzz root, and a leaf under it with
/// a record of every kind §15.2 adds, so that fuzzing starts from pages that pass every rule.
extension FuzzSeeds {
    static func indexThree() -> [String: [String: [UInt8]]] {
        let root = FuzzTarget.indexThreeFuzzRoot
        var folder = ItemRecord(type: .folder, mode: 0o755, uid: 0, gid: 0, atime: 0, mtime: 0, ctime: 0)
        folder.recordVersion = Format.versionTwo
        let name = Array("a".utf8), hash = (try? FuzzTarget.indexThreeFuzzHash(name)) ?? 0
        var held = [UInt8](repeating: 0, count: FileBlock.heldSize)
        held[0] = 0b0111_0000  // numbers 4, 5, 6: the owner record, the page, a pack
        let leaf: [(key: RecordKey, value: [UInt8])] = [
            (IndexKeyV3.fileBlock(device: 0, block: 0).recordKey,
             FileBlock(held: held, packs: [.init(index: 6, liveBytes: 100, reservedEnd: 100)]).encode()),
            (.item(1), folder.encode()),
            (IndexKeyV3.folderSummary(1).recordKey, FolderSummary(entryCount: 1, subfolderCount: 0).encode()),
            (IndexKeyV3.folderEntries(1, hash: hash).recordKey, FolderEntries([.init(name: name, itemID: 2, type: .file)]).encode()),
            (IndexKeyV3.packMembers(device: 0, pack: 6).recordKey, PackMembers([2]).encode()),
        ]
        let interior = IndexPageV3.encode(level: 1, .interior(root.root.top + [
            PageRef(firstKey: .item(2), file: FileRef(device: 0, number: 7), pageKey: key),
        ]))
        return [
            "index-root-v3": ["valid": root.encode()],
            "index-page-v3": ["leaf": IndexPageV3.encode(level: 0, .leaf(leaf)), "interior": interior],
        ]
    }
}
