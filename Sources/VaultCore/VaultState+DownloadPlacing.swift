import VaultFormat
import VaultStore

/// The direct downloads of a sync go to their names only whole (docs/FORMAT.md §13.11): rclone
/// writes them into a download folder, and from there a name that holds a file here is replaced
/// and the others go in with the rest of their group, in random bytes, so that a kill after any
/// placement leaves the count a multiple of 16. The names filled so are missing, not held, for
/// the rest of the sync (`holds`): a later download of this sync comes over them.
extension VaultState {
    mutating func placeDownloads(_ names: [String], companions: [String] = [], from downloads: DownloadFolder,
                                 remote: RemoteVault) throws {
        var replacing: [String] = [], fresh = Set<String>()
        for name in names + companions {
            if try storage.entryExists(name) { replacing.append(name) } else { fresh.insert(name) }
        }
        try refuseDifferingDownloads(replacing, from: downloads, remote: remote)
        let groups = fresh.isEmpty ? [] : try downloadedGroups(fresh, remote).map { group in
            DownloadedGroup(downloaded: group.downloaded, fill: try group.missing.map { ($0, try session.random.bytes(Format.fileSize)) })
        }
        try storage.placeDownloads(from: downloads, replacing: replacing, groups: groups)
        staging.filled.subtract(replacing)
        for group in groups { staging.filled.formUnion(group.fill.map(\.name)) }
        // They stand for the random bytes of a fill: missing, not held, for the rest of the sync.
        staging.filled.formUnion(companions)
        try storage.syncFolder()
    }

    /// A join's page downloads bring the rest of their groups from the remote (those it
    /// lists), not random bytes: a join killed after a page level was placed leaves, at each
    /// name the remote root references in those groups (a chunk file of a page not read yet),
    /// the remote's bytes, which the next sync's join downloads again and finds the same
    /// (`refuseDifferingDownloads`), so that it resumes.
    func joinGroupCompanions(_ names: [String], remote: RemoteVault, listed: Set<String>) throws -> [String] {
        guard remote.joins else { return [] }
        let fresh = Set(try names.filter { try !storage.entryExists($0) })
        return fresh.isEmpty ? [] : try downloadedGroups(fresh, remote).flatMap(\.missing).filter(listed.contains)
    }

    /// Whether the storage holds a file at `name` for this sync's decisions: a name it filled
    /// with random bytes (the rest of a downloaded file's group) is missing until it comes down.
    func holds(_ name: String) throws -> Bool {
        try !staging.filled.contains(name) && storage.entryExists(name)
    }

    /// The groups of other devices that `fresh` (names with no file here) fall in, as the remote
    /// root lists them (a mount's round downloads before it merges), each with its other files
    /// missing here, a join's stand-ins among them (`JoinStandIns`); a name in no listed group
    /// goes alone.
    private func downloadedGroups(_ fresh: Set<String>, _ remote: RemoteVault) throws -> [(downloaded: [String], missing: [String])] {
        guard let root = remote.root else { return fresh.sorted().map { ([$0], []) } }
        let naming = try Self.remoteNames(remote, root)
        defer { naming.wipe() }
        let special = Set(root.specialFiles.map(\.file.raw)), size = UInt64(Format.groupSize)
        var left = fresh, groups: [(downloaded: [String], missing: [String])] = []
        for (index, device) in root.devices.enumerated() where !left.isEmpty {
            for range in device.ownedGroups {
                for group in range.first..<range.end {
                    var names: [String] = []
                    for number in group * size..<(group + 1) * size where !(index == 0 && number < Format.indexSlotCount) {
                        let raw = FileRef(device: UInt16(index), number: number).raw
                        if !special.contains(raw) { names.append(try naming.fileName(raw)) }
                    }
                    names += remote.joinStandIns?.names(device: index, group: group) ?? []
                    let downloaded = names.filter(left.contains)
                    guard !downloaded.isEmpty else { continue }
                    left.subtract(downloaded)
                    let missing = try names.filter { try !downloaded.contains($0) && !storage.entryExists($0) }
                    groups.append((downloaded, missing))
                }
            }
        }
        return groups + left.sorted().map { ([$0], []) }
    }
}
