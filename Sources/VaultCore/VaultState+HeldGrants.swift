import VaultFormat
import VaultStore

/// A grant another device made at a number whose own name holds a file the committed root
/// still reads (docs/FORMAT.md §14.9): the sharer took a number it freed since this device's
/// last sync. Placed before the merge's commit, a crash there left that root reading a missing
/// or foreign file; so its bytes wait here, and that file is given up only after the commit
/// that stops reading it.
struct HeldGrant {
    /// The grant's FileRef: its number's own name is the place it takes.
    let file: UInt64
    let bytes: [UInt8]
}

extension VaultState {
    /// Keeps the grants `held` (name → FileRef) that came down into `downloads` for after the
    /// merge's commit; they stay out of the storage until then.
    mutating func holdGrants(_ held: [String: UInt64], from downloads: DownloadFolder) throws {
        for (name, file) in held { staging.grants[name] = HeldGrant(file: file, bytes: try downloads.read(name)) }
    }

    /// Right after the merge's commit point: each held grant goes over the file at its number's
    /// name, which the new root no longer reads, and then takes its own name, so that the count
    /// of files never moves (as a share places its grant, §14.7 step 4). A crash before leaves
    /// that file, or the grant's bytes, at the number's name and no grant at its own: what a kill
    /// between `placeDownloads`'s two renames leaves, which the next sync finishes.
    mutating func placeHeldGrants(_ grants: [String: HeldGrant]) throws {
        guard !grants.isEmpty, let root = committer.formatTwo else { return }
        let read = Set(referencedFiles().map(\.file))
        var changed = false
        for (name, grant) in grants.sorted(by: { $0.key < $1.key }) {
            // The root just committed lists the grant there and reads no file at its number.
            guard root.specialFiles.contains(where: { $0.isGrantFile && $0.file.raw == grant.file && FileName.encode($0.name) == name }),
                  !read.contains(grant.file) else { continue }
            let place = try self.name(grant.file)
            guard try storage.entryExists(place), try !storage.entryExists(name) else { continue }
            // The file at the number's name goes: its time is the session's (FORMAT.md §11.2).
            try storage.willOverwrite([place])
            try storage.write(place, offset: 0, bytes: grant.bytes)
            try storage.sync([place])
            try storage.rename(place, to: name)
            changed = true
        }
        if changed { try storage.syncFolder() }
    }

    /// The grants of other devices that the committed root lists, as the remote root does, and
    /// this storage lacks: a sync cut after its merge's commit, before a held grant went in its
    /// place, left one out, and a sync that then has nothing to merge brings it down (placed as
    /// any grant, over the file at its number's name, which that root no longer reads).
    func missingGrants(_ remote: RemoteVault) throws -> [String] {
        guard let root = remote.root, let listed = committer.formatTwo?.specialFiles, !remote.joins else { return [] }
        return try grantsToFetch(root.specialFiles.filter(listed.contains))
    }
}
