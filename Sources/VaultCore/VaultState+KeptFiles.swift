import VaultCrypto
import VaultFormat

/// A merge keeps items as this device last committed them: an edit over a delete on the remote
/// (rule 5), the local version of a file changed on both sides, deletions put back after a
/// withdrawal. Their chunks can lie in files of another device that the remote root read no
/// longer references, and that device reuses such a file once its own published root no longer
/// references it (docs/SYNC-DESIGN.md §3.2, "Kept files"): the remote's copy may hold other bytes
/// already, or will. So the merged state takes them into files of this device, sealed again
/// under new keys, while the files the last commit references still hold them here. Format 1's
/// seals of an upgraded item (FORMAT.md §13.9) count as any other, under their own identity
/// (`fileUse(_:of:)`), and become seals of format 2.
extension VaultState {
    /// Every chunk or pack member of the tree that lies in another device's file under a
    /// (file, key) the remote root does not reference (`published`) goes into a file of this
    /// device; the other device's file is left to its owner. `renumbered`: the local items the
    /// merge gave a new ID, by new ID, with the one they had: format 1 bound its seals to that
    /// ID (FORMAT.md §2.3), so theirs are sealed again wherever they lie, read under the old
    /// ID. Call it after the merged tree's own files are released: a resealed own file is
    /// released here.
    mutating func takeInKeptFiles(published: Set<FileUse>, renumbered: [UInt64: UInt64] = [:]) throws {
        func isUnpublished(_ file: UInt64, _ use: FileUse?) -> Bool {
            guard !isOwn(file, joining: false), let use else { return false }
            return !published.contains(use)
        }
        for id in tree.allItems.keys.sorted() {
            guard let item = tree.allItems[id], item.isFile else { continue }
            let sealedAs = renumbered[id]
            var indexes = item.chunks.filter { _, ref in
                (sealedAs != nil && ref.key == nil) || isUnpublished(ref.fileNumber, fileUse(ref, of: item))
            }.map(\.key)
            if let member = item.packedMember,
               (sealedAs != nil && member.key.isEmpty) || isUnpublished(member.fileNumber, fileUse(member: member, of: item)) {
                indexes.append(0)
            }
            for index in indexes.sorted() {
                // Read through the cache (the last commit's file), then sealed as a write is.
                let key = ChunkCache.Key(item: id, index: index)
                try cacheChunk(id, index, sealedAs: sealedAs)
                chunks.markDirty(key)
                try flushChunk(key)
                // A large kept file passes through the cache as a read of it does.
                try evictIfNeeded()
            }
        }
    }
}
