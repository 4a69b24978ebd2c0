import VaultFormat
import VaultStore

/// A join's covers (docs/FORMAT.md §13.12, "A join's covers"). A join makes the groups of the
/// remote's devices whole here; where some of a group's names hold files already that no
/// placement of a join brought (a state of this vault under another pattern, whose slots and
/// record lie at names only its pattern derives), the files it adds would leave the count off
/// a multiple of 16. The step that adds them adds covers too, in the same placement, up to the
/// next multiple: random names and bytes (§3.2), which no key derives and no root lists.
extension VaultState {
    /// The covers that a join's step adding `adding` files needs beside them, so that the
    /// storage's count after it is a multiple of 16; none outside a join, or when the count
    /// comes out whole (a group a kill left half placed is completed by its own files). Kept in
    /// `remote.joinCovers`: a join that fails removes them with what it placed.
    func joinCovers(adding count: Int, _ remote: RemoteVault) throws -> [(name: String, contents: [UInt8])] {
        var files: Int?
        return try joinCovers(adding: count, remote, files: &files)
    }

    /// The same for one of a step's several placements (the merge's groups): `files` is the
    /// storage's count as the step knows it, listed at its first placement that adds files and
    /// then moved by what each placement adds (the step holds the vault's lock, and a mount
    /// joins in its first round, before it is ready: nothing else writes the storage meanwhile),
    /// so that a step of many groups lists the folder once, not once a group (O(groups × files)
    /// in a big storage). The caller places the files and covers before its next call, or
    /// stops. Each placement is whole on its own: a kill between two leaves the count a multiple
    /// of 16, and the next join lists it afresh.
    func joinCovers(adding count: Int, _ remote: RemoteVault, files: inout Int?) throws -> [(name: String, contents: [UInt8])] {
        guard remote.joins, count > 0 else { return [] }
        let after = try (files ?? storage.listFiles().count) + count
        let short = (Format.groupSize - after % Format.groupSize) % Format.groupSize
        var covers: [(name: String, contents: [UInt8])] = []
        while covers.count < short {
            let cover = try Storage.cover(random: session.random)
            // What is there now: the listing and every placement since (a stat, not a listing).
            guard try !storage.entryExists(cover.name) else { continue }
            covers.append(cover)
        }
        remote.joinCovers += covers.map(\.name)
        files = after + covers.count
        return covers
    }

    /// The covers of a join that failed before its commit (`removeJoinLeftovers`).
    func removeJoinCovers(_ remote: RemoteVault) throws -> Bool {
        var removed = false
        for name in remote.joinCovers where try storage.entryExists(name) {
            try storage.remove(name)
            removed = true
        }
        remote.joinCovers = []
        return removed
    }
}
