import VaultFormat
import VaultStore

/// The direct downloads of a sync go to their names only whole (docs/FORMAT.md §13.11): rclone
/// writes them into a download folder, and from there a name that holds a file here is replaced,
/// a grant goes in its number's place (`grantPlaces`) and the others go in with the rest of their
/// group, in random bytes, so that a kill after any placement leaves the count a multiple of 16.
/// The names filled so are missing, not held, for the rest of the sync (`holds`): a later
/// download of this sync comes over them.
extension VaultState {
    mutating func placeDownloads(_ names: [String], companions: [String] = [], from downloads: DownloadFolder,
                                 remote: RemoteVault) throws {
        var replacing: [String] = [], fresh = Set<String>()
        for name in names + companions {
            if try storage.entryExists(name) { replacing.append(name) } else { fresh.insert(name) }
        }
        var replaced = try refuseDifferingDownloads(replacing, from: downloads, remote: remote)
        // A grant goes over the file at its number's own name, then takes its name (§14.9); over
        // one the committed root reads, only after the merge's commit (`holdGrants`).
        let (places, held) = try grantPlaces(fresh, remote)
        replaced += try refuseForeignGrantPlaces(places, from: downloads, remote: remote)
        for (grant, place) in places.sorted(by: { $0.key < $1.key }) { try downloads.rename(grant, to: place) }
        try holdGrants(held, from: downloads)
        fresh.subtract(places.keys)
        fresh.subtract(held.keys)
        let groups = fresh.isEmpty ? [] : try downloadedGroups(fresh, remote).map { group in
            DownloadedGroup(downloaded: group.downloaded, fill: try group.missing.map { ($0, try session.random.bytes(Format.fileSize)) })
        }
        let added = groups.reduce(0) { $0 + $1.downloaded.count + $1.fill.count }
        let covers = try joinCovers(adding: added, remote)
        // The file at each number's name goes: its time is the session's (FORMAT.md §11.2).
        try storage.willOverwrite(places.values.sorted())
        do {
            try storage.placeDownloads(from: downloads, replacing: replacing + places.values.sorted(),
                                       groups: groups + (covers.isEmpty ? [] : [DownloadedGroup(downloaded: [], fill: covers)]))
        } catch {
            // Moved in one by one: those that left the download folder are in place.
            remote.joinReplaced.formUnion(replaced.filter { !downloads.holdsWhole($0) })
            throw error
        }
        remote.joinReplaced.formUnion(replaced)
        for (grant, place) in places.sorted(by: { $0.key < $1.key }) { try storage.rename(place, to: grant) }
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
    /// (`refuseDifferingDownloads`), so that it resumes. A grant this storage lacks whose
    /// number's name is in such a group comes too, in that place (`missingGrantsByPlace`).
    func joinGroupCompanions(_ names: [String], remote: RemoteVault, listed: Set<String>) throws -> [String] {
        guard remote.joins else { return [] }
        let fresh = Set(try names.filter { try !storage.entryExists($0) })
        guard !fresh.isEmpty else { return [] }
        let grants = try missingGrantsByPlace(remote)
        return try downloadedGroups(fresh, remote).flatMap(\.missing).map { grants[$0] ?? $0 }.filter(listed.contains)
    }

    /// Whether the storage holds a file at `name` for this sync's decisions: a name it filled
    /// with random bytes (the rest of a downloaded file's group) is missing until it comes down.
    func holds(_ name: String) throws -> Bool {
        try !staging.filled.contains(name) && storage.entryExists(name)
    }

    /// The grants among `fresh` (FORMAT.md §14.9) whose number's own name holds a file here,
    /// each with that name: the grant comes down over it, then is renamed to its own name, so
    /// that the count of files never moves (coming down alone, then that file removed, a copy
    /// or a kill between the two saw one file too many). A kill between the two leaves the
    /// grant's bytes at its number's name, which no root references, and the grant missing:
    /// the next sync downloads it again. `held`: the grants whose number's name holds a file the
    /// committed root still reads (the sharer took a number it freed since this device's last
    /// sync), with their FileRefs: that file stays until the merge's commit stops reading it,
    /// and the grant goes in its place after that commit (`placeHeldGrants`); and every grant of
    /// a join that names its record first (`JoinStandIns`).
    private func grantPlaces(_ fresh: Set<String>, _ remote: RemoteVault) throws -> (places: [String: String], held: [String: UInt64]) {
        guard let root = remote.root else { return ([:], [:]) }
        let grants = root.specialFiles.filter { $0.isGrantFile && fresh.contains(FileName.encode($0.name)) }
        guard !grants.isEmpty else { return ([:], [:]) }
        let naming = try Self.remoteNames(remote, root)
        defer { naming.wipe() }
        var places: [String: String] = [:], held: [String: UInt64] = [:]
        for grant in grants {
            let place = try naming.fileName(grant.file.raw)
            if staging.protected?[place] != nil || remote.joinStandIns?.recordNamedFirst == true {
                held[FileName.encode(grant.name)] = grant.file.raw
                continue
            }
            guard !fresh.contains(place), try storage.entryExists(place) else { continue }
            places[FileName.encode(grant.name)] = place
        }
        return (places, held)
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
        // A grant with no file here at its number's name comes in its group, in that place. One
        // not here that comes later (a join's pages come before its grants) has its number's
        // name in the group, filled with the rest: the grant takes that place (`grantPlaces`).
        // On a grantee's device the owner's record is random bytes at its number's name.
        var places: [UInt64: String] = [:]
        for special in root.specialFiles {
            let name = FileName.encode(special.name)
            if special.isGrantFile && fresh.contains(name) {
                places[special.file.raw] = name
            } else if special.isGrantFile ? try !storage.entryExists(name) : special.role == .ownerUnlock && sharing.received != nil {
                places[special.file.raw] = try naming.fileName(special.file.raw)
            }
        }
        var left = fresh, groups: [(downloaded: [String], missing: [String])] = []
        for (index, device) in root.devices.enumerated() where !left.isEmpty {
            for range in device.ownedGroups {
                for group in range.first..<range.end {
                    var names: [String] = []
                    for number in group * size..<(group + 1) * size where !(index == 0 && number < Format.indexSlotCount) {
                        let raw = FileRef(device: UInt16(index), number: number).raw
                        if !special.contains(raw) {
                            names.append(try naming.fileName(raw))
                        } else if let place = places[raw] {
                            names.append(place)
                        }
                    }
                    // A grantee's record stand-in is its grant's place too.
                    names += (remote.joinStandIns?.names(device: index, group: group) ?? []).filter { !names.contains($0) }
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
