import VaultCrypto
import VaultFormat

/// A sync's side of index version 3 (docs/FORMAT.md §15.1, §15.7): which version a remote root
/// is, and the index-3 state a merge built on its pages starts from.
extension IndexRootV2 {
    /// The version byte of this root's envelopes and of its pages': 3 when it holds EHK (tag 5).
    var envelopeVersion: UInt8 {
        extensions.contains { $0.tag == IndexRootV3.entryHashKeyTag } ? IndexRootV3.envelopeVersion : StorageFormat.two.envelopeVersion
    }

    /// EHK of a root of version 3, copied into locked memory; nil for a root of version 2.
    func entryHashKey() throws -> SecretBytes? {
        try extensions.first { $0.tag == IndexRootV3.entryHashKeyTag }.map { try SecretBytes(copying: $0.value) }
    }
}

extension Committer {
    /// The index version of a merged state built on the pages of the remote `root` (read as
    /// `contents`), for this device `device`. A remote root of version 3 makes it index 3 with
    /// the remote's EHK (its pages hold entries under it): the entries and summaries as read,
    /// this device's file blocks and lists as that root holds them (its own when it wrote the
    /// root, else as this device last published them), the writer's kept as another device's
    /// records (§15.4). A remote of version 2 under a local index 3 (`local`): the local EHK,
    /// and every page, of version 2, written again. Else index 2, converting at the commit when
    /// `converts` (§15.1's policy, or `dotsafe upgrade`, asked it before the sync).
    mutating func takeIndexVersion(of root: IndexRootV2, contents: IndexContents, local: IndexThree?, device: UInt16,
                                   converts: Bool) throws {
        if let key = try root.entryHashKey() {
            var three = try IndexThree(entryHashKey: key)
            three.records.entries = contents.derived.entries
            three.records.summaries = contents.derived.summaries
            three.foreign = contents.foreignRecords
            if root.writerDevice == device {
                three.records.blocks = contents.derived.blocks
                three.records.lists = contents.derived.lists
            } else {
                let writer = root.writerDevice
                for (block, record) in contents.derived.blocks { three.foreign[IndexKeyV3.fileBlock(device: writer, block: block).recordKey] = record.encode() }
                for (pack, list) in contents.derived.lists { three.foreign[IndexKeyV3.packMembers(device: writer, pack: pack).recordKey] = list.encode() }
                for (key, value) in three.foreign where UInt16(truncatingIfNeeded: key.itemID >> 48) == device {
                    three.foreign[key] = nil
                    switch try IndexKeyV3(key, deviceCount: Int(UInt16.max) + 1) {
                    case .fileBlock(_, let block): three.records.blocks[block] = try FileBlock.decode(value)
                    case .packMembers(_, let pack): three.records.lists[pack] = try PackMembers.decode(value)
                    default: throw VaultError.damagedIndex("index 3: record \(key) of device \(device) is not a file block or a member list")
                    }
                }
            }
            indexThree = three
        } else if let local {
            var bytes = local.entryHashKey.copyBytes()
            defer { Sealer.wipe(&bytes) }
            indexThree = try IndexThree(entryHashKey: SecretBytes(copying: bytes))
            rewriteAllPages()
        } else {
            convertsToIndexThree = converts
        }
    }
}
