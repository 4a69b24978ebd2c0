import VaultCrypto
import VaultFormat

/// Fuzz targets of index version 3 (docs/FORMAT.md §15): its root and its leaves, decoded as a
/// reader of version 3 would, though no release writes them yet (issue 17).
extension FuzzTarget {
    static let indexThree: [FuzzTarget] = [
        FuzzTarget(name: "index-root-v3", run: indexRootV3),
        FuzzTarget(name: "index-page-v3", run: indexPageV3),
    ]

    public static func indexRootV3(bytes: [UInt8]) {
        guard let root = try? IndexRootV3.decode(bytes[...]) else { return }
        precondition(root.entryHashKey.count == Format.keySize, "index root v3: entry hash key")
        roundTrip(root.encode(), bytes, "index root v3")
    }

    /// A page under `indexThreeFuzzRoot`: whatever it accepts encodes back to itself, page and
    /// records, and an entry record's names have the hash its key says.
    public static func indexPageV3(bytes: [UInt8]) {
        let root = indexThreeFuzzRoot, hash = indexThreeFuzzHash
        for level: UInt8 in [0, 1] {
            guard let node = try? IndexPageV3.decode(bytes[...], level: level, root: root, entryHash: { try hash($0) }) else { continue }
            roundTrip(IndexPageV3.encode(level: level, node), bytes, "index page v3")
            guard case .leaf(let records) = node else { continue }
            for (key, value) in records {
                guard let record = try? IndexPageV3.decodeRecord(key, value, root: root, entryHash: { try hash($0) }) else {
                    preconditionFailure("index page v3: a record of an accepted page refused alone")
                }
                switch record {
                case .folderSummary(let summary): roundTrip(summary.encode(), value, "folder summary")
                case .folderEntries(let entries):
                    roundTrip(entries.encode(), value, "folder entries")
                    precondition(entries.entries.allSatisfy { (try? hash($0.name)) == key.sub - IndexKeyV3.firstEntriesSub }, "entry hash")
                case .fileBlock(let block): roundTrip(block.encode(), value, "file block")
                case .packMembers(let members): roundTrip(members.encode(), value, "pack members")
                case .item(let item): roundTrip(item.encode(), value, "item record")
                case .segment(let entries): roundTrip(ChunkSegmentV2.encode(entries), value, "chunk segment")
                }
            }
        }
    }

    /// The root the `index-page-v3` target's pages hang off: device 0 (prefix 0) owns groups
    /// 0 … 511 (numbers 0 … 8191, two file blocks), device 1 group 0; EHK `00 01 … 1f`.
    public static let indexThreeFuzzRoot: IndexRootV3 = {
        let device = DeviceEntry(deviceID: [UInt8](repeating: 1, count: DeviceEntry.idSize), namesKey: [UInt8](repeating: 2, count: Format.keySize),
                                 itemPrefix: 0, nextItemCounter: 1 << 20, nextFileNumber: 8192, coverCount: 2,
                                 ownedGroups: [GroupRange(first: 0, count: 512)], releasing: [], name: Array("fuzz".utf8))
        let other = DeviceEntry(deviceID: [UInt8](repeating: 3, count: DeviceEntry.idSize), namesKey: [UInt8](repeating: 4, count: Format.keySize),
                                itemPrefix: 7, nextItemCounter: 100, nextFileNumber: 16, coverCount: 2,
                                ownedGroups: [GroupRange(first: 0, count: 1)], releasing: [], name: Array("other".utf8))
        let owner = IndexRootV2.SpecialFile(file: FileRef(device: 0, number: 4), role: .ownerUnlock, name: [UInt8](repeating: 5, count: Format.nameBytes))
        let root = IndexRootV2(generation: 1, writerDevice: 0, devices: [device, other], specialFiles: [owner], topLevel: 0,
                               top: [PageRef(firstKey: .item(0), file: FileRef(device: 0, number: 5), pageKey: [UInt8](repeating: 6, count: Format.keySize))],
                               extensions: [.init(tag: IndexRootV3.entryHashKeyTag, value: (0..<32).map { UInt8($0) })])
        return try! IndexRootV3(root)  // a fixed, valid root: a failure here is a bug, found at once
    }()

    /// H of §15.3 under the fuzz root's EHK.
    public static let indexThreeFuzzHash: EntryHash = {
        try! EntryHash(key: SecretBytes(copying: indexThreeFuzzRoot.entryHashKey))  // 32 bytes: cannot fail but for memory
    }()
}
