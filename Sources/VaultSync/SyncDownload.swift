import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// How the other devices' files a sync needs come into the local storage (FORMAT.md §13.11,
/// "Downloads are staged"), for `dotsafe sync` and a mount's round alike: a file the last commit
/// does not reference comes down in one rclone batch into a download folder, and goes to its
/// name only whole; one it does would be written over before the merge's commit, so it comes
/// through memory into a free file of this device (`Vault.stage`), `transfers` at a time, and
/// that commit puts it in place.
struct SyncDownload {
    let vault: Vault
    let remote: RemoteStorage
    /// The remote root read: which groups the files belong to.
    let remoteVault: RemoteVault
    let storageFolder: String
    /// A test's stand-in for rclone's batch from a folder remote: called for each file, in
    /// order, with its name and the path it lands at (in the download folder; nil for a staged
    /// file, which is only announced), so that a test can cut the sync at any write. A throw
    /// is a kill: the download folder stays for the next open.
    let downloadFile: ((_ name: String, _ path: String?) throws -> Void)?
    /// The remote's listing, for a join's page downloads, which bring the rest of their groups
    /// that it lists (`Vault.joinGroupCompanions`); nil for every other download.
    var groupsListed: Set<String>? = nil

    /// Brings `names` down; returns how many came.
    func run(_ names: [String], filesMoved: ((SyncProgress) -> Void)?) throws -> Int {
        guard !names.isEmpty else { return 0 }
        // Each name's bytes change, directly or when the merge's commit puts its staged copy in
        // place: the lock's time must leave the second a backup saw (FORMAT.md §11.2).
        try vault.willDownload(names)
        let (direct, staged) = try vault.splitDownloads(names)
        let directCount = direct.isEmpty ? 0 : try downloadDirect(direct, filesMoved: filesMoved)
        let batch = max(1, remote.rclone.settings.transfers)
        for start in stride(from: 0, to: staged.count, by: batch) {
            let part = Array(staged[start..<min(start + batch, staged.count)])
            for (name, file) in zip(part, try remote.read(part)) {
                guard let file, file.count == Format.fileSize else {
                    throw RemoteError.missingFiles(remote: remote.location.description, names: [name])
                }
                try downloadFile?(name, nil)
                try vault.stage(name, file)
            }
        }
        return directCount + staged.count
    }

    /// rclone (1.60) writes a file in place: a kill mid-file leaves it torn in the download
    /// folder, never at a storage name (R-BLK-5), and the next writing open removes the folder.
    /// Returns how many came, a join's group companions among them.
    private func downloadDirect(_ direct: [String], filesMoved: ((SyncProgress) -> Void)?) throws -> Int {
        let companions = try groupsListed.map { try vault.joinGroupCompanions(direct, remote: remoteVault, listed: $0) } ?? []
        if !companions.isEmpty { try vault.willDownload(companions) }
        let batch = direct + companions
        let downloads = try DownloadFolder(storagePath: storageFolder, random: SystemRandom())
        var killed = false
        do {
            if let downloadFile {
                for name in batch {
                    do { try downloadFile(name, downloads.path + "/" + name) } catch {
                        killed = true
                        throw error
                    }
                }
            } else {
                try remote.download(batch, into: downloads.path, filesDone: SyncProgress.batch(.down, total: batch.count, to: filesMoved))
            }
            let torn = batch.filter { !downloads.holdsWhole($0) }
            guard torn.isEmpty else { throw RemoteError.missingFiles(remote: remote.location.description, names: torn) }
            try vault.placeDownloads(direct, companions: companions, from: downloads, remote: remoteVault)
            try downloads.remove()
            return batch.count
        } catch {
            if !killed { try? downloads.remove() }
            throw error
        }
    }
}
