import VaultCrypto
import VaultFormat
import VaultStore

/// What a sync downloads over files the last commit references (docs/FORMAT.md §13.11,
/// "Downloads are staged"): the other devices reuse their freed files, so new bytes can be due
/// at a name the committed root still reads under older ones.
struct DownloadStaging {
    struct Staged {
        let target: UInt64
        let staged: UInt64
        let digest: [UInt8]
    }

    /// Names of the other devices' files the committed root references, with their FileRefs:
    /// taken before anything comes down; nil when no sync is downloading.
    var protected: [String: UInt64]?
    /// Staged so far, by the target's name.
    var files: [String: Staged] = [:]
    /// Names this sync filled with random bytes, the rest of a group a direct download came
    /// into: missing, not held, until a download of this sync comes over them (§13.11).
    var filled = Set<String>()
    /// Grants held in memory until the merge's commit, by name (`holdGrants`).
    var grants: [String: HeldGrant] = [:]
    /// The state references what was staged (a merge took the remote's records): the next
    /// commit lists it (tag 1025) and puts it in place. Until then a commit keeps it as it is (a
    /// mount's commits while its round downloads); the sync's end lets it go (`endDownloads`).
    var adopted = false
}

extension VaultState {
    /// A sync starts downloading: the names the committed state references are kept from now on.
    /// (A mounted vault commits first, `Vault.beginLiveDownloads`: its later commits only drop
    /// references to other devices' files, so the names kept hold for them too.)
    mutating func beginDownloads() throws {
        // A merge adopted what is staged and its commit is still due: that commit puts it in place.
        guard !staging.adopted else { return }
        endDownloads()
        var protected: [String: UInt64] = [:]
        for use in referencedFiles() where !isOwn(use.file, joining: false) { protected[try name(use.file)] = use.file }
        staging = DownloadStaging(protected: protected)
    }

    /// Of `names`, those to download at their names and those to stage; the ones staged
    /// already are in neither.
    func splitDownloads(_ names: [String]) -> (direct: [String], staged: [String]) {
        let protected = staging.protected ?? [:]
        let fresh = names.filter { staging.files[$0] == nil }
        return (fresh.filter { protected[$0] == nil }, fresh.filter { protected[$0] != nil })
    }

    /// Writes a downloaded file into a free file of this device, for the name `target`.
    mutating func stage(_ target: String, _ file: [UInt8]) throws {
        guard let raw = staging.protected?[target] else { throw SyncRefusal.damagedRemote("\(target) is not staged") }
        let number = try writer.store(file)
        if let earlier = staging.files[target] { writer.release(earlier.staged) }
        staging.files[target] = DownloadStaging.Staged(target: raw, staged: number, digest: Self.stagingDigest(file))
    }

    /// Where the bytes of the files staged so far are: target name → staged file's name.
    func stagedRedirects() throws -> [String: String] {
        try staging.files.mapValues { try name($0.staged) }
    }

    static func stagingDigest(_ file: [UInt8]) -> [UInt8] { Array(SHA256.hash(file).prefix(StagedDownloads.digestSize)) }

    /// The merged state is this vault's: of what was staged, the files it needs at their names
    /// (`wanted`, as `applyMerge` returns them) go into its commit; the rest is let go (a mount's
    /// round fetches before it merges, and the merge may keep the local side's older bytes).
    mutating func adoptStagedDownloads(wanted: Set<String>) {
        guard staging.protected != nil else { return }
        for (name, file) in staging.files where !wanted.contains(name) {
            writer.release(file.staged)
            staging.files[name] = nil
        }
        staging.adopted = true
    }

    /// A sync's commit is done, or a new sync begins: files staged for no merge go (no root
    /// references them).
    mutating func endDownloads() {
        guard !staging.adopted else { return }
        for file in staging.files.values { writer.release(file.staged) }
        staging = DownloadStaging()
    }

    /// Before a root: what a merge adopted goes into it as tag 1025. A commit before the merge
    /// leaves the staging as it is.
    mutating func prepareStagedRoot() {
        guard staging.adopted, !staging.files.isEmpty, var formatTwo = committer.formatTwo else { return }
        let entries = staging.files.values.sorted { $0.target < $1.target }.map {
            StagedDownloads.Entry(target: FileRef(raw: $0.target), staged: FileRef(raw: $0.staged), digest: $0.digest)
        }
        formatTwo.extensions.removeAll { $0.tag == StagedDownloads.extensionTag }
        formatTwo.extensions.append(IndexRootV2.Extension(tag: StagedDownloads.extensionTag, value: StagedDownloads(entries: entries).encode()))
        formatTwo.extensions.sort { $0.tag < $1.tag }
        committer.formatTwo = formatTwo
    }

    /// Right after the commit point of a root with tag 1025: each staged file's bytes go to its
    /// target's name, and the staged file gets random bytes; it is free after the next commit,
    /// which no longer lists the tag.
    mutating func finishStagedDownloads() throws {
        guard staging.adopted else { return }
        let files = staging.files.values.sorted { $0.target < $1.target }, secrets = self.secrets, grants = staging.grants
        staging = DownloadStaging()
        for file in files {
            try Self.putStaged(file, storage: storage, name: { try secrets.fileName($0) }, random: session.random)
            writer.release(file.staged)
        }
        committer.formatTwo?.extensions.removeAll { $0.tag == StagedDownloads.extensionTag }
        try placeHeldGrants(grants)
    }

    /// A staged file whose digest matches goes to its target's name (atomically), then random
    /// bytes over it; one that does not match was put in place already.
    static func putStaged(_ file: Staged, storage: any StorageFolder, name: (UInt64) throws -> String, random: any RandomSource) throws {
        let stagedName = try name(file.staged), targetName = try name(file.target)
        guard let bytes = try? storage.read(stagedName), stagingDigest(bytes) == file.digest else { return }
        if try storage.entryExists(targetName) {
            try storage.replace(targetName, contents: bytes)
        } else {
            try storage.create(targetName, contents: bytes, durable: true)
            try storage.syncFolder()
        }
        try storage.write(stagedName, offset: 0, bytes: try random.bytes(Format.fileSize))
        try storage.sync([stagedName])
    }

    typealias Staged = DownloadStaging.Staged

    /// The entries of a root's tag 1025 that keep its rules (others are ignored, §13.5).
    static func stagedEntries(_ root: IndexRootV2) -> [StagedDownloads.Entry] {
        guard let value = root.extensions.first(where: { $0.tag == StagedDownloads.extensionTag })?.value,
              let staged = StagedDownloads.decode(value) else { return [] }
        return staged.entries.filter {
            $0.target.device != root.writerDevice && root.fileIsValid($0.target)
                && $0.staged.device == root.writerDevice && root.fileIsValid($0.staged)
        }
    }

    /// Opened read-only, nothing is put in place: each target whose staged file matches is
    /// read from there.
    static func stagedReads(_ root: IndexRootV2, storage: any StorageFolder, secrets: VaultSecrets) throws -> any StorageFolder {
        var redirects: [String: String] = [:]
        for entry in stagedEntries(root) {
            let stagedName = try secrets.fileName(entry.staged.raw)
            guard let bytes = try? storage.read(stagedName), stagingDigest(bytes) == entry.digest else { continue }
            redirects[try secrets.fileName(entry.target.raw)] = stagedName
        }
        return redirects.isEmpty ? storage : RedirectedReadsFolder(storage, redirects: redirects)
    }

    /// A writing open of a root with tag 1025 finishes what a crash cut short, before any page is
    /// read; returns the staged files (not free until the next commit).
    static func finishStagedAtOpen(_ root: IndexRootV2, storage: any StorageFolder, secrets: VaultSecrets,
                                   random: any RandomSource) throws -> Set<UInt64> {
        var files = Set<UInt64>()
        for entry in stagedEntries(root) {
            try putStaged(Staged(target: entry.target.raw, staged: entry.staged.raw, digest: entry.digest), storage: storage,
                          name: { try secrets.fileName($0) }, random: random)
            files.insert(entry.staged.raw)
        }
        return files
    }
}

extension VaultState {
    /// After a writing open put the staged downloads of its root in place: the staged files are
    /// free after the next commit, which no longer lists the tag.
    mutating func forgetStagedDownloads(_ files: Set<UInt64>) {
        for file in files.sorted() { writer.release(file) }
        committer.formatTwo?.extensions.removeAll { $0.tag == StagedDownloads.extensionTag }
    }

    /// A sync cut inside a download at the files' names (FORMAT.md §13.11) can leave another
    /// device's file half written, or files of a group of its that this root does not know yet.
    /// When the folder shows that (a name of the storage's form that is not a whole file, or a
    /// count that is not a multiple of 16), the other devices' files are made what this root
    /// says: random bytes at the unreferenced files of their groups that are not whole, and
    /// nothing at their numbers from `nextFileNumber` up (as §9.3 removes a device's own) or in
    /// groups they released (a kill inside `removeReleasedElsewhere`).
    mutating func repairOtherDevicesFiles() throws {
        guard let formatTwo = committer.formatTwo, formatTwo.devices.count > 1 else { return }
        let all = try storage.listAllNames(), whole = Set(try storage.listFiles())
        let torn = all.contains { FileName.isWellFormed($0) && !whole.contains($0) }
        guard torn || whole.count % Format.groupSize != 0 else { return }
        let existing = Set(all), referenced = Set(referencedFiles().map(\.file))
        let special = Set(formatTwo.specialFiles.map(\.file.raw)), group = UInt64(Format.groupSize)
        var changed = false
        for (index, device) in formatTwo.devices.enumerated() where index != Int(formatTwo.localDevice) {
            for range in device.ownedGroups {
                for number in range.first * group..<range.end * group where !(index == 0 && number < Format.indexSlotCount) {
                    let raw = FileRef(device: UInt16(index), number: number).raw
                    guard !special.contains(raw), !referenced.contains(raw) else { continue }
                    let name = try self.name(raw)
                    guard !whole.contains(name) else { continue }
                    // Something at the name that is not a regular file is not ours (R-SEC-4).
                    if existing.contains(name) {
                        do { try storage.remove(name) } catch StoreError.unusableFile { continue }
                    }
                    try storage.create(name, contents: try session.random.bytes(Format.fileSize), durable: true)
                    changed = true
                }
            }
            for raw in try releasedFiles(of: device, index, special: special) where !referenced.contains(raw) {
                try storage.remove(try name(raw))
                changed = true
            }
            for number in device.nextFileNumber..<device.nextFileNumber + UInt64(existing.count) {
                let name = try self.name(FileRef(device: UInt16(index), number: number).raw)
                guard existing.contains(name) else { continue }
                do {
                    try storage.remove(name)
                    changed = true
                } catch StoreError.unusableFile {}
            }
        }
        if changed { try storage.syncFolder() }
    }
}
