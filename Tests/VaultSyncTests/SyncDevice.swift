import DotSafeTestSupport
import Foundation
import Synchronization
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore
@testable import VaultSync

/// One device of a sync test: a real storage folder on disk, the vault a fixed pattern key
/// opens in it (no PBKDF2: fast), and syncs with a real rclone against a test remote.
final class SyncDevice {
    let name: String
    let folder: String
    private(set) var vault: Vault
    static let seed: UInt8 = 7
    /// The pattern key's bytes (one person, one pattern: a pattern change gives another), and
    /// for a vault shared with that person's vault, the sharer's contact code.
    private(set) var seed: UInt8
    let sharedBy: ContactCode?
    /// What each lock of this device re-creates (docs/FORMAT.md §11.3).
    let recreation: RecreationBudget
    /// The index's shape (small: an interior level from a few thousand files).
    let fanOut: PageTable.FanOut
    /// Opens with `Vault.Options.indexThree` (docs/FORMAT.md §15): a new vault is index 3.
    var indexThree: Bool

    init(_ name: String, seed: UInt8 = SyncDevice.seed, recreation: RecreationBudget = .standard,
         fanOut: PageTable.FanOut = .standard, indexThree: Bool = false) throws {
        self.name = name
        self.seed = seed
        self.recreation = recreation
        self.fanOut = fanOut
        self.indexThree = indexThree
        sharedBy = nil
        folder = try TestFolder.make("sync-\(name)") + "/storage"
        try Storage.initialize(at: folder, random: SystemRandom())
        vault = try Self.open(folder, seed: seed, recreation: recreation, fanOut: fanOut, indexThree: indexThree)
    }

    /// The vault that `code` shared with `owner`'s vault, in `owner`'s storage: new until its
    /// first sync brings it down.
    init(_ name: String, sharedWith owner: SyncDevice, by code: ContactCode, indexThree: Bool = false) throws {
        self.name = name
        seed = owner.seed
        fanOut = .standard
        self.indexThree = indexThree
        sharedBy = code
        recreation = .standard
        folder = owner.folder
        var options = Vault.Options(cacheBytes: 8 << 20)
        options.indexThree = indexThree
        options.loadsOnDemand = indexThree && Self.onDemandEverywhere
        options.indexCacheLeaves = Self.indexCacheEverywhere
        vault = try Vault.openForSync(storage: try Storage.open(at: folder), secrets: Self.secrets(seed), sharedBy: code, options: options)
    }

    /// `DOTSAFE_TEST_ON_DEMAND=1`: index-3 devices hold their index in part (`tools/test-on-demand`).
    static let onDemandEverywhere = ProcessInfo.processInfo.environment["DOTSAFE_TEST_ON_DEMAND"] == "1"
    static let indexCacheEverywhere = ProcessInfo.processInfo.environment["DOTSAFE_TEST_INDEX_CACHE"].flatMap { Int($0) }

    static func secrets(_ seed: UInt8) throws -> VaultSecrets {
        try VaultSecrets(patternKey: SecretBytes(copying: [UInt8](repeating: seed, count: 32)))
    }

    static func open(_ folder: String, seed: UInt8 = seed, sharedBy: ContactCode? = nil,
                     recreation: RecreationBudget = .standard, fanOut: PageTable.FanOut = .standard, indexThree: Bool = false) throws -> Vault {
        let storage = try Storage.open(at: folder, recreation: recreation)
        var options = Vault.Options(cacheBytes: 8 << 20)
        options.indexFanOut = fanOut
        options.indexThree = indexThree
        options.loadsOnDemand = indexThree && Self.onDemandEverywhere
        options.indexCacheLeaves = Self.indexCacheEverywhere
        if let sharedBy { return try openShared(storage, seed: seed, sharedBy, options: options) }
        return try Vault.open(storage: storage, secrets: secrets(seed), options: options)
    }

    /// The vault `code` shared, through its grant in `storage`; where the grant is not there
    /// yet (a first sync cut short, `GrantJoinCountCutTests`), as that first sync opens it.
    static func openShared(_ storage: any StorageFolder, seed: UInt8, _ code: ContactCode, options: Vault.Options) throws -> Vault {
        do { return try Vault.open(storage: storage, secrets: secrets(seed), sharedBy: code, options: options) } catch SharingError.noGrant {
            return try Vault.openForSync(storage: storage, secrets: secrets(seed), sharedBy: code, options: options)
        }
    }

    /// Locks and opens the vault again from the disk: what a sync left is what counts.
    func reopen() throws {
        try vault.lock()
        vault = try Self.open(folder, seed: seed, sharedBy: sharedBy, recreation: recreation, fanOut: fanOut, indexThree: indexThree)
    }

    /// Gives the vault the pattern of `newSeed` (FORMAT.md §13.12) and opens it with that.
    func changePattern(to newSeed: UInt8) throws {
        try vault.changePattern(to: try Self.secrets(newSeed))
        seed = newSeed
        try reopen()
    }

    /// Opens the storage with the pattern of `other` instead, changing nothing in it (someone
    /// typed another pattern).
    func usePattern(_ other: UInt8) throws {
        seed = other
        try reopen()
    }

    /// A sync stopped before the change named `label` (the nth one of a name as "name#n"), as a
    /// process that died there: throws `Stop`; the vault is opened again from the disk afterwards.
    /// `mounted`: a mount's round (`mountRound`) in place of `dotsafe sync`'s.
    func sync(_ remote: TestRemote, stoppingAt label: String, mounted: Bool = false) throws {
        if mounted {
            try mountRound(remote, stoppingAt: label)
            return
        }
        let stop = StopAt(label)
        try sync(remote, beforeChange: { try stop.check($0) })
    }

    /// A sync stopped where `beforeChange` throws (a process that died there); the vault is
    /// opened again from the disk afterwards.
    /// `storage`: the folder the vault is opened on for this sync (a test's `CutStorageFolder`,
    /// which stops it after some mutations of the storage); nil: the vault as it is.
    /// `seeing`: when the sync stops, `seenAfterCut` says what a read-only open saw before the
    /// writing open (`dotsafe fsck` right after a kill).
    func sync(_ remote: TestRemote, storage: (any StorageFolder)? = nil, seeing: Bool = false,
              beforeChange: @escaping (String) throws -> Void) throws {
        if let storage { try open(over: storage) }
        var synchronizer = VaultSynchronizer(vault: vault, remote: try Self.remoteStorage(remote), storageFolder: folder, deviceName: name)
        synchronizer.beforeChange = beforeChange
        synchronizer.replacesPartialJoin = replacesPartialJoin
        synchronizer.replacesRemote = replacesRemote
        try dying(seeing: seeing) { _ = try synchronizer.run() }
    }

    /// `rounds` rounds of a mounted vault (`MountedSynchronizer`, `mount --sync`) opened over
    /// `storage` (a test's `CutStorageFolder`), one vault for all of them as a mount keeps it
    /// open between its rounds; stopped, seen and opened again as
    /// `sync(_:storage:seeing:beforeChange:)`.
    func mountRounds(_ remote: TestRemote, _ rounds: Int, storage: any StorageFolder, seeing: Bool = false) throws {
        try open(over: storage)
        let round = MountedSynchronizer(vault: vault, remote: try Self.remoteStorage(remote), storageFolder: folder, deviceName: name)
        try dying(seeing: seeing) {
            for _ in 0..<rounds { _ = try round.run() }
        }
    }

    /// The vault dropped and opened again over `storage` in place of the disk's folder.
    private func open(over storage: any StorageFolder) throws {
        vault.discard()
        var options = Vault.Options(cacheBytes: 8 << 20)
        options.indexFanOut = fanOut
        options.indexThree = indexThree
        options.loadsOnDemand = indexThree && Self.onDemandEverywhere
        options.indexCacheLeaves = Self.indexCacheEverywhere
        do {
            vault = try sharedBy.map { try Self.openShared(storage, seed: seed, $0, options: options) }
                ?? Vault.open(storage: storage, secrets: Self.secrets(seed), options: options)
        } catch {
            vault = try Self.open(folder, seed: seed, sharedBy: sharedBy, recreation: recreation, fanOut: fanOut, indexThree: indexThree)
            throw error
        }
    }

    /// Runs `run`, which may die as a killed process; the vault is opened again from the disk
    /// afterwards, and with `seeing`, when it died, `seenAfterCut` says what a read-only open
    /// saw before that.
    private func dying(seeing: Bool, _ run: () throws -> Void) throws {
        defer { reopenAfterCrash() }
        seenAfterCut = []
        do { try run() } catch {
            if seeing {
                vault.discard()
                seenAfterCut = try Self.readOnlyView(folder, seed: seed, sharedBy: sharedBy, indexThree: indexThree)
            }
            throw error
        }
    }

    /// A sync whose downloads, copied file by file from a folder remote in place of rclone's batch,
    /// are cut at their `cut`th write (from 1): that file is left half written where it lands, as
    /// rclone leaves a file it writes in place when killed (a staged one is cut before the vault
    /// writes it), and the process dies (throws `Stop`; `seenAfterCut` and `leftAfterCut` say
    /// what was there, then the vault is opened again from the disk). Returns
    /// how many writes the sync made when it ended before the cut (it completed).
    /// `mounted`: a mount's round (`mountRound`) in place of `dotsafe sync`'s.
    func sync(_ remote: TestRemote, cuttingDownloadAt cut: Int, mounted: Bool = false) throws -> Int {
        let cutter = DownloadCut(cut, remote: remote.path)
        defer { stagedDownloads = cutter.counts.staged }
        do {
            if mounted {
                var round = MountedSynchronizer(vault: vault, remote: try Self.remoteStorage(remote), storageFolder: folder, deviceName: name)
                round.downloadFile = { try cutter.write($0, at: $1) }
                _ = try round.run()
            } else {
                var synchronizer = VaultSynchronizer(vault: vault, remote: try Self.remoteStorage(remote), storageFolder: folder, deviceName: name)
                synchronizer.downloadFile = { try cutter.write($0, at: $1) }
                _ = try synchronizer.run()
            }
        } catch {
            vault.discard()
            seenAfterCut = try Self.readOnlyView(folder, seed: seed, sharedBy: sharedBy, indexThree: indexThree)
            leftAfterCut = try otherEntries()
            reopenAfterCrash()
            throw error
        }
        try reopen()
        return cutter.counts.writes
    }

    /// What a read-only open (`dotsafe fsck`, no repairs) saw right after the last cut of
    /// `sync(_:cuttingDownloadAt:)` (or `sync(_:storage:seeing:beforeChange:)`), before any writing open: the check's problems, and each
    /// entry of the storage's name form that is not a whole file (R-BLK-5). Empty: clean.
    private(set) var seenAfterCut: [String] = []
    /// The names of the folders the last cut left in the storage (`NAME.downloading`, §13.11).
    private(set) var leftAfterCut: [String] = []

    /// A read-only open's check of the storage at `folder`, and its entries of the wrong form.
    /// `indexThree`: the open reads index 3, as `dotsafe fsck` does under the switch.
    static func readOnlyView(_ folder: String, seed: UInt8, sharedBy: ContactCode?, indexThree: Bool = false) throws -> [String] {
        var options = Vault.Options(readOnly: true, cacheBytes: 8 << 20)
        options.indexThree = indexThree
        options.loadsOnDemand = indexThree && Self.onDemandEverywhere
        options.indexCacheLeaves = Self.indexCacheEverywhere
        let storage = try Storage.open(at: folder)
        let vault: Vault
        do {
            vault = try sharedBy.map { try Vault.open(storage: storage, secrets: secrets(seed), sharedBy: $0, options: options) }
                ?? Vault.open(storage: storage, secrets: secrets(seed), options: options)
        } catch SharingError.noGrant {
            // A first sync of a shared vault cut before its commit: nothing of it opens yet.
            return try wrongSizes(folder)
        }
        let report = try vault.check()
        try vault.lock()
        return report.storageProblems + report.damagedItems.map { "damaged: \($0)" } + (try wrongSizes(folder))
    }

    /// The storage's files that are not whole.
    static func wrongSizes(_ folder: String) throws -> [String] {
        var seen: [String] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) where FileName.isWellFormed(name) {
            let size = (try? FileManager.default.attributesOfItem(atPath: folder + "/" + name)[.size] as? Int) ?? -1
            if size != Format.fileSize { seen.append("\(name) holds \(size) bytes") }
        }
        return seen
    }

    /// Entries of the storage folder that are not of the storage's name form (a sync's leftovers).
    func otherEntries() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder).filter { !FileName.isWellFormed($0) }.sorted()
    }

    /// How many files the last `sync(_:cuttingDownloadAt:)` staged (FORMAT.md §13.11).
    private(set) var stagedDownloads = 0

    /// Counts a sync's download writes and cuts the chosen one (`sync(_:cuttingDownloadAt:)`).
    final class DownloadCut: Sendable {
        let cut: Int
        let remote: String
        private let seen = Mutex<(writes: Int, staged: Int)>((0, 0))
        var counts: (writes: Int, staged: Int) { seen.withLock { $0 } }

        init(_ cut: Int, remote: String) {
            self.cut = cut
            self.remote = remote
        }

        func write(_ name: String, at path: String?) throws {
            let writes = seen.withLock { seen in
                seen.writes += 1
                if path == nil { seen.staged += 1 }
                return seen.writes
            }
            // A staged file goes into a free file of the vault's own: cut before that write.
            guard let path else {
                if writes == cut { throw Stop() }
                return
            }
            let bytes = try Data(contentsOf: URL(fileURLWithPath: remote + "/" + name))
            if writes == cut {
                try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: path))
                throw Stop()
            }
            try bytes.write(to: URL(fileURLWithPath: path))
        }
    }

    /// The storage as it is now, to put back with `restore(from:)` (the vault stays open).
    func snapshot() throws -> String {
        let copy = try TestFolder.make("snapshot-\(name)") + "/storage"
        try FileManager.default.copyItem(atPath: folder, toPath: copy)
        return copy
    }

    /// A mounted vault's round (`MountedSynchronizer`, `mount --sync`) on this device's vault,
    /// stopped as `sync(_:stoppingAt:)` when `label` is given. The vault is opened again from the
    /// disk afterwards: what the round left is what counts.
    @discardableResult
    func mountRound(_ remote: TestRemote, stoppingAt label: String? = nil) throws -> SyncSummary {
        var round = MountedSynchronizer(vault: vault, remote: try Self.remoteStorage(remote), storageFolder: folder, deviceName: name)
        if let label {
            let stop = StopAt(label)
            round.beforeChange = { try stop.check($0) }
        }
        let summary: SyncSummary
        do { summary = try round.run() } catch {
            reopenAfterCrash()
            throw error
        }
        try reopen()
        return summary
    }

    /// Where a sync that a test stopped died.
    struct Stop: Error {}

    /// Throws `Stop` before the change named `label`, counting each name's calls.
    final class StopAt: Sendable {
        let label: String
        private let seen = Mutex<[String: Int]>([:])

        init(_ label: String) { self.label = label }

        func check(_ change: String) throws {
            let count = seen.withLock { seen in
                seen[change, default: 0] += 1
                return seen[change]!
            }
            if (count > 1 ? "\(change)#\(count)" : change) == label { throw Stop() }
        }
    }

    /// Locks the vault and opens it again over the storage folder `wrap` makes of the disk's.
    func reopen<Folder: StorageFolder>(_ wrap: (any StorageFolder) -> Folder) throws -> Folder {
        try vault.lock()
        let folder = wrap(try Storage.open(at: self.folder))
        vault = try Vault.open(storage: folder, secrets: Self.secrets(seed), options: Vault.Options(cacheBytes: 8 << 20))
        return folder
    }

    /// Why the storage did not open after the last crash a test made; nil when it did.
    private(set) var reopenFailure: (any Error)?

    /// The vault's memory erased without a commit, as a process that died, and opened again.
    func reopenAfterCrash() {
        vault.discard()
        do {
            vault = try Self.open(folder, seed: seed, sharedBy: sharedBy, recreation: recreation, fanOut: fanOut, indexThree: indexThree)
            reopenFailure = nil
        } catch {
            reopenFailure = error
        }
    }

    /// The storage put back as the folder `snapshot` holds it (a test that starts again from
    /// one state): the vault is dropped without writing anything, then opened from the disk.
    func restore(from snapshot: String) throws {
        vault.discard()
        try Self.copyFiles(from: snapshot, to: folder)
        vault = try Self.open(folder, seed: seed, sharedBy: sharedBy, recreation: recreation, fanOut: fanOut, indexThree: indexThree)
    }

    /// `target` made to hold exactly the files of `source`.
    static func copyFiles(from source: String, to target: String) throws {
        let manager = FileManager.default
        if !manager.fileExists(atPath: target) { try manager.createDirectory(atPath: target, withIntermediateDirectories: true) }
        for name in try manager.contentsOfDirectory(atPath: target) { try manager.removeItem(atPath: target + "/" + name) }
        for name in try manager.contentsOfDirectory(atPath: source) {
            try manager.copyItem(atPath: source + "/" + name, toPath: target + "/" + name)
        }
    }

    static func remoteStorage(_ remote: TestRemote) throws -> RemoteStorage {
        RemoteStorage(try RemoteLocation(remote.path), rclone: try Rclone(environment: TestRemote.environment, configFile: remote.configFile))
    }

    /// `dotsafe sync`'s sync, or with `mounted` a mount's round.
    @discardableResult
    func sync(_ remote: TestRemote, mounted: Bool) throws -> SyncSummary {
        try mounted ? mountRound(remote) : sync(remote)
    }

    /// `dotsafe sync`'s sync, or with `mounted` a mount's round, on the vault as it is, not
    /// opened again after: what a mount, which keeps its vault open between rounds, holds.
    @discardableResult
    func syncKeepingOpen(_ remote: TestRemote, mounted: Bool = false) throws -> SyncSummary {
        let storage = try Self.remoteStorage(remote)
        if mounted { return try MountedSynchronizer(vault: vault, remote: storage, storageFolder: folder, deviceName: name).run() }
        return try VaultSynchronizer(vault: vault, remote: storage, storageFolder: folder, deviceName: name).run()
    }

    /// `dotsafe sync --replace-partial-join`: this device's syncs that build a `VaultSynchronizer`
    /// say so while it is set.
    var replacesPartialJoin = false
    /// `dotsafe sync --new-remote`: as `replacesPartialJoin`.
    var replacesRemote = false

    @discardableResult
    func sync(_ remote: TestRemote) throws -> SyncSummary {
        var synchronizer = VaultSynchronizer(vault: vault, remote: try Self.remoteStorage(remote), storageFolder: folder, deviceName: name)
        synchronizer.replacesPartialJoin = replacesPartialJoin
        synchronizer.replacesRemote = replacesRemote
        let summary = try synchronizer.run()
        try reopen()
        return summary
    }

    // MARK: Files by path

    func id(_ path: String) throws -> UInt64 {
        var id = Vault.rootID
        for part in path.split(separator: "/") { id = try vault.lookup(id, Array(part.utf8)) }
        return id
    }

    func write(_ path: String, _ text: String) throws {
        let parts = path.split(separator: "/").map(String.init)
        let parent = try id(parts.dropLast().joined(separator: "/"))
        let file: UInt64
        if let existing = try? vault.lookup(parent, Array(parts.last!.utf8)) {
            file = existing
            try vault.truncate(file, size: 0)
        } else {
            file = try vault.create(.file, in: parent, named: Array(parts.last!.utf8), mode: 0o644)
        }
        try vault.write(file, offset: 0, bytes: Array(text.utf8))
        try vault.commit()
    }

    func write(_ path: String, bytes: [UInt8], at offset: UInt64 = 0) throws {
        let file = try id(path)
        try vault.write(file, offset: offset, bytes: bytes)
        try vault.commit()
    }

    func makeFolder(_ path: String) throws {
        let parts = path.split(separator: "/").map(String.init)
        _ = try vault.create(.folder, in: try id(parts.dropLast().joined(separator: "/")), named: Array(parts.last!.utf8), mode: 0o755)
        try vault.commit()
    }

    func rename(_ path: String, to newName: String) throws {
        let parts = path.split(separator: "/").map(String.init)
        let parent = try id(parts.dropLast().joined(separator: "/"))
        try vault.rename(Array(parts.last!.utf8), in: parent, to: Array(newName.utf8), in: parent)
        try vault.commit()
    }

    func read(_ path: String) throws -> String {
        let file = try id(path)
        return String(decoding: try vault.read(file, offset: 0, count: Int(try vault.attributes(file).size)), as: UTF8.self)
    }

    /// Every file by path with its text, folders with a trailing slash.
    func tree() throws -> [String: String] { try Self.tree(of: vault) }

    /// The same of `vault` (one a test opened apart, read-only say).
    static func tree(of vault: Vault, _ folderID: UInt64 = Vault.rootID, prefix: String = "") throws -> [String: String] {
        var result: [String: String] = [:]
        for (name, id) in try vault.contents(ofFolder: folderID) {
            let path = prefix + String(decoding: name, as: UTF8.self)
            if try vault.attributes(id).type == .folder {
                result[path + "/"] = ""
                result.merge(try tree(of: vault, id, prefix: path + "/")) { a, _ in a }
            } else {
                result[path] = String(decoding: try vault.read(id, offset: 0, count: Int(try vault.attributes(id).size)), as: UTF8.self)
            }
        }
        return result
    }

    /// The names of the storage's files.
    var storageNames: Set<String> { Set((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []) }

    func finish() {
        try? vault.lock()
        TestFolder.remove((folder as NSString).deletingLastPathComponent)
    }
}
