import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A `--replace-partial-join` that fails after its join replaced files (docs/FORMAT.md §13.12,
/// "Replacing a partial join"), through the library (`VaultSynchronizer`, `MountedSynchronizer`):
/// the error it throws says how many files the join replaced and that they keep the remote's
/// bytes, where the refusal alone says that nothing was changed (the CLI's lines:
/// `FailedReplacingJoinCommandTests`). A join killed after its last placement, then the owner
/// frees numbers and takes them again, and a chunk of its newest file is changed on the remote
/// (ADVERSARIES.md: the provider). Real vaults on disk, a real rclone, a local remote.
@Suite(.serialized) struct FailedReplacingJoinErrorTests {
    @Test(arguments: [false, true])
    func aReplacingJoinThatFailsThrowsWhatItReplaced(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let owner = try SyncedPatternChangeTests.syncedLaptop(remote)
        let joiner = try SyncDevice("desktop")
        defer { owner.finish(); joiner.finish() }

        // The join counted, then (from the same start) cut after its last placement.
        let joinerStart = try joiner.snapshot(), remoteStart = try WithdrawnKilledJoinTests.copy(remote, "start")
        defer { try? FileManager.default.removeItem(atPath: remoteStart) }
        let counting = try StorageCount.countedSync(joiner, remote)
        let placements = counting.done.indices.filter { counting.done[$0] == "placeDownloads" }
        try #require(placements.count > 1, "\(counting.done)")
        try SyncDevice.copyFiles(from: remoteStart, to: remote.path)
        try joiner.restore(from: joinerStart)
        let cut = CutStorageFolder(try Storage.open(at: joiner.folder), cutAt: placements.last! + 1)
        do { try joiner.sync(remote, storage: cut, seeing: true) { _ in } } catch {}

        let newest = "file-6.txt"
        try KilledJoinRemoteChangedTests.freeAndTakeAgain(owner, remote, removing: ["file-1.txt", "notes/note-3.txt"],
                                                          writing: [newest: String(repeating: "6", count: 600_000)])
        let id = try owner.id(newest)
        let (ref, name) = try owner.vault.state.withLock { state in
            let item = try #require(state.tree.allItems[id])
            let ref = try #require(item.chunks.values.map(\.fileNumber).max())
            return (ref, try state.name(ref))
        }
        var changed = try Data(contentsOf: URL(fileURLWithPath: served + "/" + name))
        changed[1000] ^= 0xff
        try changed.write(to: URL(fileURLWithPath: served + "/" + name))

        var thrown: (any Error)?
        do {
            if mounted {
                var round = MountedSynchronizer(vault: joiner.vault, remote: try SyncDevice.remoteStorage(remote),
                                                storageFolder: joiner.folder, deviceName: joiner.name)
                round.replacesPartialJoin = true
                _ = try round.run()
            } else {
                var synchronizer = VaultSynchronizer(vault: joiner.vault, remote: try SyncDevice.remoteStorage(remote),
                                                     storageFolder: joiner.folder, deviceName: joiner.name)
                synchronizer.replacesPartialJoin = true
                _ = try synchronizer.run()
            }
        } catch { thrown = error }
        joiner.reopenAfterCrash()
        let error = try #require(thrown, "the join over the changed chunk went through")
        let told = try #require((error as? FailedAfterJoinReplaced)?.replaced, "the failed join replaced no file: \(error)")
        let failure = "the vault on the remote is damaged: file \(FileRef(raw: ref)) does not open under its key"
        #expect("\(error)" == failure + "; " + FailedReplacingJoinCommandTests.stays(told))
        #expect(!"\(error)".contains("nothing was changed"), "\(error)")
    }
}
