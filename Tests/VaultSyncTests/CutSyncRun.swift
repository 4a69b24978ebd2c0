import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
import VaultStore

/// A sync that a test cuts at one storage mutation after another (`ReleasedGroupsCutTests`,
/// `FilledGroupsCutTests`): each cut starts from the device's storage and the remote as they
/// were, and what the cut left must read as before the sync or merged, and sync on to the
/// merged state.
struct CutSyncRun {
    let device: SyncDevice
    let remote: TestRemote
    let before: [String: String]
    let expected: [String: String]
    /// More checks of the device after each cut and after the sync that follows it (index 3's
    /// records), told where: they record their own issues.
    var inspect: ((_ place: String) throws -> Void)?
    /// The run cut: `dotsafe sync`'s (0), or that many rounds of a mount on one open vault
    /// (`SyncDevice.mountRounds`). The sync after each cut is `dotsafe sync`'s.
    var mountRounds = 0
    private let victim: String, remoteCopy: String

    /// Takes the device's storage and the remote as they are now, the start of every cut.
    init(_ device: SyncDevice, _ remote: TestRemote, before: [String: String], expected: [String: String]) throws {
        self.device = device
        self.remote = remote
        self.before = before
        self.expected = expected
        victim = try device.snapshot()
        remoteCopy = remote.path + "-copy"
        try FileManager.default.copyItem(atPath: remote.path, toPath: remoteCopy)
    }

    func remove() { try? FileManager.default.removeItem(atPath: remoteCopy) }

    /// The sync stopped before mutation `cut` (0: the first); returns what went wrong, empty
    /// when nothing did. `seeing`: a read-only open right after the cut must find the storage
    /// clean too (`dotsafe fsck` before any writing open).
    func cut(at cut: Int, seeing: Bool = false) throws -> [String] { try run(cutAt: cut, before: nil, seeing: seeing) }

    /// The sync stopped before its change of the remote named `label` ("upload", "root#2": the
    /// names of `SyncDevice.StopAt`), as a process that died there.
    func cut(before label: String, seeing: Bool = false) throws -> [String] { try run(cutAt: nil, before: label, seeing: seeing) }

    private func run(cutAt cut: Int?, before label: String?, seeing: Bool) throws -> [String] {
        try device.restore(from: victim)
        try SyncDevice.copyFiles(from: remoteCopy, to: remote.path)
        let storage = CutStorageFolder(try Storage.open(at: device.folder), cutAt: cut)
        let stop = label.map(SyncDevice.StopAt.init)
        var failures: [String] = []
        // (A cut past the mutations of this run, whose commits refresh covers at random, lets
        // it complete: what follows holds for that too.)
        do {
            if mountRounds > 0 {
                try device.mountRounds(remote, mountRounds, storage: storage, seeing: seeing)
            } else {
                try device.sync(remote, storage: storage, seeing: seeing) { try stop?.check($0) }
            }
        } catch {}
        let place = label.map { "cut before the remote's change \($0)" } ?? "cut before mutation \(cut ?? 0) (after \(storage.done.suffix(2)))"
        if seeing && !device.seenAfterCut.isEmpty { failures.append("\(place), read-only: \(device.seenAfterCut)") }
        let report = try device.vault.check()
        let tree = try? device.tree()
        guard report.isClean, tree == before || tree == expected else {
            let reads = tree == before ? "before" : tree == expected ? "merged" : "neither"
            return failures + ["\(place): \(report.damagedItems) \(report.storageProblems), reads: \(reads)"]
        }
        try inspect?(place)
        let next = try device.sync(remote), merged = try device.tree()
        if next.conflicts != 0 || merged != expected { failures.append("\(place): the next sync gave \(next.actions)") }
        try inspect?(place + ", then a sync")
        return failures
    }

    /// After the cuts: the other device syncs and holds the merged state too, and both storages
    /// check clean, with whole groups.
    func finish(with other: SyncDevice) throws {
        try other.sync(remote)
        #expect(try other.tree() == expected)
        for device in [device, other] {
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.damagedItems) \(report.storageProblems)")
            #expect(try Storage.open(at: device.folder).listFiles().count % Format.groupSize == 0, "\(device.name)")
        }
    }
}
