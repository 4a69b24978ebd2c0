/// The pages of index version 3 (docs/FORMAT.md §15.5): §13.6's body, sealed in an envelope of
/// version 3, holding the keys of §15.2. Each record is checked by its own rules when its page
/// loads (§15.6); rules that span records wait for the records they need.
public enum IndexPageV3 {
    public enum Record: Equatable, Sendable {
        case item(ItemRecord)
        case segment([ChunkSegmentV2.Entry])
        case folderSummary(FolderSummary)
        case folderEntries(FolderEntries)
        case fileBlock(FileBlock)
        case packMembers(PackMembers)
    }

    /// The body is §13.6's: the same encoder.
    public static func encode(level: UInt8, _ node: IndexPageV2.Node) -> [UInt8] { IndexPageV2.encode(level: level, node) }

    /// Decodes a page and every record in it. `entryHash` is H of §15.3 under the root's EHK.
    public static func decode(_ body: ArraySlice<UInt8>, level: UInt8, root: IndexRootV3,
                              entryHash: ([UInt8]) throws -> UInt32) throws -> IndexPageV2.Node {
        let node = try IndexPageV2.decode(body, level: level)
        guard case .leaf(let records) = node else { return node }
        // A summary or entries under an item whose record is on this page: both loaded, so checked.
        var types: [UInt64: ItemRecord.ItemType] = [:]
        for (key, value) in records {
            let record = try decodeRecord(key, value, root: root, entryHash: entryHash)
            switch record {
            case .item(let item): types[key.itemID] = item.type
            case .folderSummary, .folderEntries:
                if let type = types[key.itemID], type != .folder {
                    throw FormatError.invalid("index page: record \(key) under item \(key.itemID), which is not a folder")
                }
            default: break
            }
        }
        return node
    }

    /// One record by the form of its key (§15.2) and its own rules (§15.6).
    public static func decodeRecord(_ key: RecordKey, _ value: [UInt8], root: IndexRootV3,
                                    entryHash: ([UInt8]) throws -> UInt32) throws -> Record {
        switch try IndexKeyV3(key, deviceCount: root.root.devices.count) {
        case .item:
            let item = try ItemRecord.decode(value)
            guard item.recordVersion == Format.versionTwo else { throw FormatError.invalid("index page: item record version \(item.recordVersion)") }
            return .item(item)
        case .segment: return .segment(try ChunkSegmentV2.decode(value))
        case .folderSummary: return .folderSummary(try FolderSummary.decode(value))
        case .folderEntries(_, let hash): return .folderEntries(try FolderEntries.decode(value, hash: hash, entryHash: entryHash))
        case .fileBlock(let device, let block):
            let decoded = try FileBlock.decode(value)
            try decoded.validate(block: block, of: root.root.devices[Int(device)])
            return .fileBlock(decoded)
        case .packMembers(let device, let pack):
            guard root.root.fileIsValid(FileRef(device: device, number: pack)) else {
                throw FormatError.invalid("index page: member list of \(device):\(pack), not a data file of the device")
            }
            return .packMembers(try PackMembers.decode(value))
        }
    }
}
