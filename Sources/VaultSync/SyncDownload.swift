import VaultCore
import VaultFormat

/// How the other devices' files a sync needs come into the local storage (FORMAT.md §13.11,
/// "Downloads are staged"), for `dotsafe sync` and a mount's round alike: a file the last commit
/// does not reference comes down at its name, in one rclone batch; one it does would be written
/// over before the merge's commit, so it comes through memory into a free file of this device
/// (`Vault.stage`), `transfers` at a time, and that commit puts it in place.
struct SyncDownload {
    let vault: Vault
    let remote: RemoteStorage
    let storageFolder: String
    /// A test's stand-in for rclone's batch from a folder remote: called for each file, in
    /// order, with its name and the path it lands at (nil for a staged file, which is only
    /// announced), so that a test can cut the sync at any write into the storage.
    let downloadFile: ((_ name: String, _ path: String?) throws -> Void)?

    /// Brings `names` down; returns how many came.
    func run(_ names: [String], filesMoved: ((SyncProgress) -> Void)?) throws -> Int {
        guard !names.isEmpty else { return 0 }
        // Each name's bytes change, directly or when the merge's commit puts its staged copy in
        // place: the lock's time must leave the second a backup saw (FORMAT.md §11.2).
        try vault.willDownload(names)
        let (direct, staged) = try vault.splitDownloads(names)
        if let downloadFile {
            for name in direct { try downloadFile(name, storageFolder + "/" + name) }
        } else if !direct.isEmpty {
            try remote.download(direct, into: storageFolder, filesDone: SyncProgress.batch(.down, total: direct.count, to: filesMoved))
        }
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
        return direct.count + staged.count
    }
}
