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
    /// The index's shape (small: an interior level from a few thousand files).
    let fanOut: PageTable.FanOut

    init(_ name: String, seed: UInt8 = SyncDevice.seed, fanOut: PageTable.FanOut = .standard) throws {
        self.name = name
        self.seed = seed
        self.fanOut = fanOut
        sharedBy = nil
        folder = try TestFolder.make("sync-\(name)") + "/storage"
        try Storage.initialize(at: folder, random: SystemRandom())
        vault = try Self.open(folder, seed: seed, fanOut: fanOut)
    }

    /// The vault that `code` shared with `owner`'s vault, in `owner`'s storage: new until its
    /// first sync brings it down.
    init(_ name: String, sharedWith owner: SyncDevice, by code: ContactCode) throws {
        self.name = name
        seed = owner.seed
        fanOut = .standard
        sharedBy = code
        folder = owner.folder
        vault = try Vault.openForSync(storage: try Storage.open(at: folder), secrets: Self.secrets(seed), sharedBy: code,
                                      options: Vault.Options(cacheBytes: 8 << 20))
    }

    static func secrets(_ seed: UInt8) throws -> VaultSecrets {
        try VaultSecrets(patternKey: SecretBytes(copying: [UInt8](repeating: seed, count: 32)))
    }

    static func open(_ folder: String, seed: UInt8 = seed, sharedBy: ContactCode? = nil, fanOut: PageTable.FanOut = .standard) throws -> Vault {
        let storage = try Storage.open(at: folder)
        var options = Vault.Options(cacheBytes: 8 << 20)
        options.indexFanOut = fanOut
        if let sharedBy { return try Vault.open(storage: storage, secrets: secrets(seed), sharedBy: sharedBy, options: options) }
        return try Vault.open(storage: storage, secrets: secrets(seed), options: options)
    }

    /// Locks and opens the vault again from the disk: what a sync left is what counts.
    func reopen() throws {
        try vault.lock()
        vault = try Self.open(folder, seed: seed, sharedBy: sharedBy, fanOut: fanOut)
    }

    /// Gives the vault the pattern of `newSeed` (FORMAT.md §13.12) and opens it with that.
    func changePattern(to newSeed: UInt8) throws {
        try vault.changePattern(to: try Self.secrets(newSeed))
        seed = newSeed
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
    func sync(_ remote: TestRemote, storage: (any StorageFolder)? = nil, beforeChange: @escaping (String) throws -> Void) throws {
        if let storage {
            vault.discard()
            var options = Vault.Options(cacheBytes: 8 << 20)
            options.indexFanOut = fanOut
            do {
                vault = try sharedBy.map { try Vault.open(storage: storage, secrets: Self.secrets(seed), sharedBy: $0, options: options) }
                    ?? Vault.open(storage: storage, secrets: Self.secrets(seed), options: options)
            } catch {
                vault = try Self.open(folder, seed: seed, sharedBy: sharedBy, fanOut: fanOut)
                throw error
            }
        }
        var synchronizer = VaultSynchronizer(vault: vault, remote: try Self.remoteStorage(remote), storageFolder: folder, deviceName: name)
        synchronizer.beforeChange = beforeChange
        defer { reopenAfterCrash() }
        _ = try synchronizer.run()
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

    /// Why the storage did not open after the last crash a test made; nil when it did.
    private(set) var reopenFailure: (any Error)?

    /// The vault's memory erased without a commit, as a process that died, and opened again.
    private func reopenAfterCrash() {
        vault.discard()
        do {
            vault = try Self.open(folder, seed: seed, sharedBy: sharedBy, fanOut: fanOut)
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
        vault = try Self.open(folder, seed: seed, sharedBy: sharedBy, fanOut: fanOut)
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

    @discardableResult
    func sync(_ remote: TestRemote) throws -> SyncSummary {
        let summary = try VaultSynchronizer(vault: vault, remote: try Self.remoteStorage(remote), storageFolder: folder, deviceName: name).run()
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
    func tree(_ folderID: UInt64 = Vault.rootID, prefix: String = "") throws -> [String: String] {
        var result: [String: String] = [:]
        for (name, id) in try vault.contents(ofFolder: folderID) {
            let path = prefix + String(decoding: name, as: UTF8.self)
            if try vault.attributes(id).type == .folder {
                result[path + "/"] = ""
                result.merge(try tree(id, prefix: path + "/")) { a, _ in a }
            } else {
                result[path] = try read(path)
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
