import VaultFormat

/// What the allocator and the packs take from index 3's records (docs/FORMAT.md §15.4), so that
/// an open learns free files and pack fills without following every reference (issue 17, step 4).
extension IndexRecordsV3 {
    /// The raw FileRefs whose bits the writer device's blocks set: what its root references and
    /// what its sync base pins, but not the index's own files.
    func heldFiles(device: UInt16) -> Set<UInt64> {
        var held = Set<UInt64>()
        for (block, record) in blocks {
            let first = UInt64(block) * IndexKeyV3.numbersPerBlock
            for (byteIndex, byte) in record.held.enumerated() where byte != 0 {
                for bit in 0..<8 where byte & (1 << bit) != 0 {
                    held.insert(FileRef(device: device, number: first + UInt64(byteIndex * 8 + bit)).raw)
                }
            }
        }
        return held
    }

    /// The writer device's packs as its pack entries give them, by raw FileRef, their members
    /// not known (`PackStore.knowMembers` takes them from the lists when needed): an open that
    /// holds the index in part reads the file blocks, not the lists.
    func packEntries(device: UInt16) -> [UInt64: PackInfo] {
        var packs: [UInt64: PackInfo] = [:]
        for (block, record) in blocks {
            for entry in record.packs {
                let number = UInt64(block) * IndexKeyV3.numbersPerBlock + UInt64(entry.index)
                packs[FileRef(device: device, number: number).raw] = PackInfo(liveBytes: Int(entry.liveBytes), reservedEnd: Int(entry.reservedEnd))
            }
        }
        return packs
    }

    /// The writer device's packs as its pack entries and member lists give them, by raw FileRef.
    func packs(device: UInt16) throws -> [UInt64: PackInfo] {
        var packs: [UInt64: PackInfo] = [:]
        for (block, record) in blocks {
            for entry in record.packs {
                let number = UInt64(block) * IndexKeyV3.numbersPerBlock + UInt64(entry.index)
                guard let list = lists[number] else {
                    throw VaultError.damagedIndex("index 3: pack \(number)'s entry has no member list")
                }
                packs[FileRef(device: device, number: number).raw] = PackInfo(liveBytes: Int(entry.liveBytes), members: Set(list.itemIDs),
                                                                               reservedEnd: Int(entry.reservedEnd))
            }
        }
        return packs
    }
}
