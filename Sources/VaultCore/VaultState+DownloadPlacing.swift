import VaultFormat
import VaultStore

/// The direct downloads of a sync go to their names only whole (docs/FORMAT.md §13.11): rclone
/// writes them into a download folder, and from there a name that holds a file here is replaced
/// and the others go in with the rest of their group, in random bytes, so that a kill after any
/// placement leaves the count a multiple of 16. The names filled so are missing, not held, for
/// the rest of the sync (`holds`): a later download of this sync comes over them.
extension VaultState {
    mutating func placeDownloads(_ names: [String], from downloads: DownloadFolder, remote: RemoteVault) throws {
        var replacing: [String] = [], fresh = Set<String>()
        for name in names {
            if try storage.entryExists(name) { replacing.append(name) } else { fresh.insert(name) }
        }
        let groups = fresh.isEmpty ? [] : try downloadedGroups(fresh, remote)
        try storage.placeDownloads(from: downloads, replacing: replacing, groups: groups)
        staging.filled.subtract(replacing)
        for group in groups { staging.filled.formUnion(group.fill.map(\.name)) }
        try storage.syncFolder()
    }

    /// Whether the storage holds a file at `name` for this sync's decisions: a name it filled
    /// with random bytes (the rest of a downloaded file's group) is missing until it comes down.
    func holds(_ name: String) throws -> Bool {
        try !staging.filled.contains(name) && storage.entryExists(name)
    }

    /// The groups of other devices that `fresh` (names with no file here) fall in, as the remote
    /// root lists them (a mount's round downloads before it merges), each with its other missing
    /// files in random bytes; a name in no listed group goes alone.
    private func downloadedGroups(_ fresh: Set<String>, _ remote: RemoteVault) throws -> [DownloadedGroup] {
        guard let root = remote.root else { return fresh.sorted().map { DownloadedGroup(downloaded: [$0], fill: []) } }
        let naming = try Self.remoteNames(remote, root)
        defer { naming.wipe() }
        let special = Set(root.specialFiles.map(\.file.raw)), size = UInt64(Format.groupSize)
        var left = fresh, groups: [DownloadedGroup] = []
        for (index, device) in root.devices.enumerated() where !left.isEmpty {
            for range in device.ownedGroups {
                for group in range.first..<range.end {
                    var names: [String] = []
                    for number in group * size..<(group + 1) * size where !(index == 0 && number < Format.indexSlotCount) {
                        let raw = FileRef(device: UInt16(index), number: number).raw
                        if !special.contains(raw) { names.append(try naming.fileName(raw)) }
                    }
                    let downloaded = names.filter(left.contains)
                    guard !downloaded.isEmpty else { continue }
                    left.subtract(downloaded)
                    var fill: [(name: String, contents: [UInt8])] = []
                    for name in names where !downloaded.contains(name) {
                        if try !storage.entryExists(name) { fill.append((name, try session.random.bytes(Format.fileSize))) }
                    }
                    groups.append(DownloadedGroup(downloaded: downloaded, fill: fill))
                }
            }
        }
        return groups + left.sorted().map { DownloadedGroup(downloaded: [$0], fill: []) }
    }
}
