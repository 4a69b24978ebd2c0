import VaultStore

/// The direct downloads of a sync go to their names only whole (docs/FORMAT.md §13.11): rclone
/// writes them into a download folder, and from there a name that holds a file here is
/// replaced, and the others are renamed in, in a row. The rest of another device's new group
/// comes after the merge's downloads (`completeOtherGroups`): a name made here before would
/// read as a file this storage holds, and the merge would not download it.
extension VaultState {
    mutating func placeDownloads(_ names: [String], from downloads: DownloadFolder) throws {
        var replacing: [String] = [], fresh: [String] = []
        for name in names {
            if try storage.entryExists(name) { replacing.append(name) } else { fresh.append(name) }
        }
        let groups = fresh.isEmpty ? [] : [DownloadedGroup(downloaded: fresh, fill: [])]
        try storage.placeDownloads(from: downloads, replacing: replacing, groups: groups)
        try storage.syncFolder()
    }
}
