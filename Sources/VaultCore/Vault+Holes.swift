import VaultFormat

/// Where a file's data lies, at chunk granularity (FORMAT.md §6.2: a chunk never written has no
/// entry and reads as zeros; a truncate up and fsck's repair leave such holes): what `st_blocks`
/// counts and what lseek's SEEK_DATA and SEEK_HOLE find. A chunk holds data when storage
/// holds it, when it is in memory with bytes not stored yet, or when it is a packed file's
/// member; it counts whole, up to the file's end.
extension Vault {
    public enum SeekTarget: Sendable { case data, hole }

    /// The first offset at or after `offset` that is data (or a hole); nil when there is none
    /// before the end (ENXIO). The end of the file counts as a hole.
    public func seek(_ id: UInt64, from offset: UInt64, to target: SeekTarget) throws -> UInt64? {
        try lockedEvicting { state in
            try state.fault(id)
            return try state.seek(id, from: offset, to: target)
        }
    }
}

extension VaultState {
    /// The chunk indexes that hold data without a stored chunk entry.
    func unstoredDataChunks(_ id: UInt64, _ item: Item) -> Set<Int> {
        guard item.isFile else { return [] }
        var found = chunks.indexesInMemory(of: id)
        if item.packedMember != nil { found.insert(0) }
        return found.filter { item.chunks[$0] == nil }
    }

    /// Bytes of the file in chunks that hold data, each counted up to the file's end.
    func allocatedBytes(_ id: UInt64, _ item: Item) -> UInt64 {
        guard item.isFile else { return 0 }
        let size = item.record.size
        let count = ChunkOffsets.chunkCount(forSize: size)
        guard count > 0 else { return 0 }
        // getattr's common case, asked for every entry of `ls -l`: nothing to look up in memory.
        if item.chunks.count == count { return size }
        let unstored = unstoredDataChunks(id, item).filter { $0 < count }
        let whole = UInt64(item.chunks.count + unstored.count) * UInt64(ChunkOffsets.chunkSize)
        let last = count - 1
        let lastIsData = item.chunks[last] != nil || unstored.contains(last)
        let shortOfLast = lastIsData ? ChunkOffsets.start(ofChunk: count) - size : 0
        return min(whole - min(whole, shortOfLast), size)
    }

    func seek(_ id: UInt64, from offset: UInt64, to target: Vault.SeekTarget) throws -> UInt64? {
        let item = try tree.item(id)
        guard item.isFile else { throw VaultError.wrongType }
        let size = item.record.size
        guard offset < size else { return nil }
        let unstored = unstoredDataChunks(id, item)
        func isData(_ index: Int) -> Bool { item.chunks[index] != nil || unstored.contains(index) }
        let first = ChunkOffsets.chunkIndex(offset)
        switch target {
        case .data:
            if isData(first) { return offset }
            guard let next = (item.chunks.keys.filter { $0 > first } + unstored.filter { $0 > first }).min() else { return nil }
            let start = ChunkOffsets.start(ofChunk: next)
            return start < size ? start : nil
        case .hole:
            var index = first
            while isData(index) { index += 1 }
            return index == first ? offset : min(ChunkOffsets.start(ofChunk: index), size)
        }
    }
}
