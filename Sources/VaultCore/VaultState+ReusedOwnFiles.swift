import VaultFormat

/// A move to a new remote (docs/SYNC-DESIGN.md §3.4 "Moving to a new remote") merges with a root
/// that the first mover wrote from its copy of this device's groups. When the old remote died
/// while the devices were out of step, that copy can be older than this storage: a file this
/// device freed and took again since (synced with the old remote, never seen by the first mover)
/// is named by the remote root under its old key, while here the same name holds the new
/// contents. A merge would reference one name under two keys (R-SYN-4), and reading it here
/// gives the wrong bytes, so the move stops before anything is written. A name the local state
/// no longer references counts as long as it still opens under the remote's key: a file that
/// only the last published root holds (pinned) keeps its bytes.
extension VaultState {
    /// A page of this device that the remote root references under a key the local state does
    /// not: it must open here under that key.
    func refuseReusedOwnPage(_ ref: PageRef, level: UInt8, name: String, version: UInt8) throws {
        do {
            var body = try remotePage(ref, level: level, name: name, version: version)
            body.wipeStorage()
        } catch SyncRefusal.damagedRemote {
            throw SyncRefusal.ownFilesReused
        }
    }

    /// Each chunk and pack member of this device that the remote's records (`items`) reference
    /// under a (file, key) the local state does not: it must open here under that key.
    func refuseReusedOwnFiles(_ remote: RemoteVault, items: [UInt64: Item], naming: VaultSecrets) throws {
        let present = referencedFiles(pages: [])
        var names = Set<String>()
        for use in referencedFiles(pages: [], items: items) where isOwn(use.file, joining: remote.joins) && !present.contains(use) {
            names.insert(try naming.fileName(use.file))
        }
        guard !names.isEmpty else { return }
        do {
            try checkOpens(names, items: items, naming: naming)
        } catch SyncRefusal.damagedRemote {
            throw SyncRefusal.ownFilesReused
        }
    }
}
