import VaultFormat
import VaultStore

/// A join's grants (docs/FORMAT.md §14.9) in a storage that may hold a state of this vault under
/// another pattern (§13.12). A grant goes over the file at its number's own name, which no
/// remote file has, so the join checks that name as it checks its downloads.
extension VaultState {
    /// A join takes a grant's place only where this sync filled that name, or where the grant's
    /// own bytes are (a join killed between the grant's two renames): its groups bring the
    /// grants they hold (`missingGrantsByPlace`), so anything else there was here when it began,
    /// and may be a file that a state under another pattern reads (the sharer freed the number
    /// since and took it for the grant): refused, as a download that differs
    /// (`refuseDifferingDownloads`). Told that no other state is here (`replacesPartialJoin`),
    /// the grant goes over it: returned, for `joinReplaced`.
    func refuseForeignGrantPlaces(_ places: [String: String], from downloads: DownloadFolder, remote: RemoteVault) throws -> [String] {
        guard remote.joins else { return [] }
        var foreign: [String] = []
        for (grant, place) in places.sorted(by: { $0.key < $1.key }) where !staging.filled.contains(place) {
            guard try (try? storage.read(place)) != downloads.read(grant) else { continue }
            guard remote.replacesPartialJoin else { throw SyncRefusal.heldUnderOtherPattern }
            if remote.joinHeld?.contains(place) == true { foreign.append(place) }
        }
        return foreign
    }

    /// The grants a join downloads that this storage lacks (every grant but a grantee's own,
    /// its record), by their number's own name: a group that comes down with the pages brings
    /// them in their places (`joinGroupCompanions`), so that a join never finds at a grant's
    /// place a file it filled itself before a kill. None when the join holds its grants until
    /// its commit (`JoinStandIns.recordNamedFirst`). Not `grantsToFetch`: until the merge the
    /// writer's device is a new vault's, 0, whose grants that leaves out.
    func missingGrantsByPlace(_ remote: RemoteVault) throws -> [String: String] {
        guard let root = remote.root, remote.joinStandIns?.recordNamedFirst != true else { return [:] }
        let own = try sharing.received.map(grantName)
        let naming = try Self.remoteNames(remote, root)
        defer { naming.wipe() }
        var grants: [String: String] = [:]
        for special in root.specialFiles where special.isGrantFile {
            let name = FileName.encode(special.name)
            guard name != own, try !storage.entryExists(name) else { continue }
            grants[try naming.fileName(special.file.raw)] = name
        }
        return grants
    }

    /// A join that fails before its commit (`removeJoinLeftovers`): a grant it renamed from the
    /// name of its number, where a file was when it began (a killed join's grant bytes, or one
    /// the option replaced), goes back there, so that the group it takes its place in stays
    /// whole; the next sync's join finds it there. Returns whether one moved.
    func returnJoinGrants(_ remote: RemoteVault, _ root: IndexRootV2, held: Set<String>) throws -> Bool {
        let naming = try Self.remoteNames(remote, root)
        defer { naming.wipe() }
        var moved = false
        for special in root.specialFiles where special.isGrantFile {
            let name = FileName.encode(special.name), place = try naming.fileName(special.file.raw)
            guard !held.contains(name), held.contains(place), try storage.entryExists(name), try !storage.entryExists(place) else { continue }
            try storage.rename(name, to: place)
            moved = true
        }
        return moved
    }
}
