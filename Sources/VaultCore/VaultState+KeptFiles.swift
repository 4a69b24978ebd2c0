import VaultCrypto
import VaultFormat

/// A merge keeps items as this device last committed them: an edit over a delete on the remote
/// (rule 5), the local version of a file changed on both sides, deletions put back after a
/// withdrawal. Their chunks can lie in files of another device that the remote root read no
/// longer references, and that device reuses such a file once its own published root no longer
/// references it (docs/SYNC-DESIGN.md §3.2, "Kept files"): the remote's copy may hold other bytes
/// already, or will. So the merged state takes them into files of this device, sealed again
/// under new keys, while the files the last commit references still hold them here.
extension VaultState {
    /// Every chunk or pack member of the tree that lies in another device's file under a
    /// (file, key) the remote root does not reference (`published`) goes into a file of this
    /// device; the other device's file is left to its owner.
    mutating func takeInKeptFiles(published: Set<FileUse>) throws {
        func isUnpublished(_ file: UInt64, _ slot: SecretArena.Slot?, offset: UInt32 = 0) -> Bool {
            guard !isOwn(file, joining: false), let use = fileUse(file, slot, offset: offset) else { return false }
            return !published.contains(use)
        }
        for id in tree.allItems.keys.sorted() {
            guard let item = tree.allItems[id], item.isFile else { continue }
            var indexes = item.chunks.filter { isUnpublished($0.value.fileNumber, $0.value.key) }.map(\.key)
            if let member = item.packedMember, isUnpublished(member.fileNumber, item.memberKey, offset: member.offset) {
                indexes.append(0)
            }
            for index in indexes.sorted() {
                // Read through the cache (the last commit's file), then sealed as a write is.
                let key = ChunkCache.Key(item: id, index: index)
                try cacheChunk(id, index)
                chunks.markDirty(key)
                try flushChunk(key)
                // A large kept file passes through the cache as a read of it does.
                try evictIfNeeded()
            }
        }
    }
}
