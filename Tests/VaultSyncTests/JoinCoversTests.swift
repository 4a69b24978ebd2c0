import DotSafeTestSupport
import Foundation
import Synchronization
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A join's covers and `--replace-partial-join` where the user is wrong (FORMAT.md §13.12, "A
/// join's covers", "Replacing a partial join"): the storage holds this vault under another
/// pattern from before a withdrawal (§14.8), whose files lie at some names of the groups the
/// join makes whole. (a) A join that fails after a placement that brought covers (a chunk file
/// changed on the remote, ADVERSARIES.md: the provider) removes them with what it placed: the
/// storage's names as before, the old state reading as before; the files the option's join
/// replaced keep the remote's bytes, which its error says (`FailedAfterJoinReplaced`). (b) The option's join replaces
/// files that the old state reads: that state loses exactly the items in them, its check names
/// them, and the joined vault is whole. Real vaults on disk, a real rclone, a local remote.
@Suite(.serialized) struct JoinCoversTests {
    typealias Files = SharedSyncTests

    @Test func aJoinThatFailsAfterPlacingCoversRemovesThemWithWhatItPlaced() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try SyncedPatternChangeTests.withdrawnThenChanged(remote)
        defer { first.finish(); second.finish() }
        // A file the join downloads in its merge's batch of chunk files, changed on the remote
        // after the upload: it comes down, is placed, and does not open under its key.
        try first.write("late.txt", String(repeating: "l", count: 300_000))
        try first.reopen()
        try first.sync(remote)
        let lateFile = try #require(try KeptOverDeleteSyncTests.chunkFiles(first, "late.txt").max { $0.key < $1.key }?.value)
        let late = try first.vault.state.withLock { try $0.name(lateFile) }
        let served = try #require(remote.servedFolder) + "/" + late
        let written = try #require(FileManager.default.contents(atPath: served))
        var changed = written
        changed[1000] ^= 0xff
        try changed.write(to: URL(fileURLWithPath: served))

        let before = try Files.files(second.folder), oldTree = try second.tree()
        try second.usePattern(8)
        second.replacesPartialJoin = true
        let watch = CoverWatch(try Storage.open(at: second.folder))
        var thrown: (any Error)?
        do { try second.sync(remote, storage: watch) { _ in } } catch { thrown = error }
        let line = try #require(thrown.map { "\($0)" }, "the join over the changed file went through")
        let damaged = "the vault on the remote is damaged: file \(FileRef(raw: lateFile)) does not open under its key"
        // The join had placed files, covers among them, the count whole after each placement.
        #expect(!watch.covers.isEmpty, "no placement of the join brought covers: \(watch.groupSizes)")
        #expect(!watch.countsAfter.isEmpty && watch.countsAfter.allSatisfy { $0 % Format.groupSize == 0 }, "\(watch.countsAfter)")
        // All gone: the storage's names as before, no download folder left; the files the
        // option's join replaced hold the remote's bytes (they were there when it began).
        let after = try Files.files(second.folder)
        #expect(after.count % Format.groupSize == 0, "\(after.count) files")
        #expect(Set(watch.covers).isDisjoint(with: after.keys), "covers left: \(watch.covers.filter { after[$0] != nil })")
        #expect(Set(after.keys) == Set(before.keys), "added \(after.keys.filter { before[$0] == nil }.count), removed \(before.keys.filter { after[$0] == nil }.count)")
        let remoteFiles = try Files.files(try #require(remote.servedFolder))
        let rewritten = before.keys.filter { after[$0] != nil && after[$0] != before[$0] }
        #expect(!rewritten.isEmpty && rewritten.allSatisfy { watch.replaced.contains($0) && after[$0] == remoteFiles[$0] },
                "\(rewritten.count) rewritten, \(watch.replaced.count) replaced")
        // So the error says what stays, not that nothing was changed.
        #expect(line == damaged + "; " + FailedReplacingJoinCommandTests.stays(rewritten.count), "\(line)")
        let others = try second.otherEntries()
        #expect(others.isEmpty, "\(others)")
        #expect(second.vault.isNew)

        // The old pattern reads its state as before, clean.
        try second.usePattern(SyncDevice.seed)
        #expect(try second.tree() == oldTree)
        let report = try second.vault.check()
        #expect(report.isClean, "\(report.damagedItems) \(report.storageProblems)")

        // With the file as written back on the remote, the join goes through: the remote's
        // vault, whole.
        try written.write(to: URL(fileURLWithPath: served))
        try second.usePattern(8)
        let joined = try StorageCount.countedSync(second, remote)
        #expect(try second.tree() == first.tree())
        #expect(StorageCount.uneven(joined).isEmpty, "\(StorageCount.uneven(joined))")
        #expect(try StorageCount.files(second.folder) % Format.groupSize == 0)
        #expect(try second.vault.check().isClean)
    }

    @Test func theOptionsJoinOverAStateThatReadsReplacedFilesLosesExactlyTheirItems() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let big = ["big-1.txt": String(repeating: "1", count: 300_000), "big-2.txt": String(repeating: "2", count: 300_000)]
        let (first, second) = try SyncedPatternChangeTests.withdrawnThenChanged(remote, writing: big)
        defer { first.finish(); second.finish() }
        // The owner frees big-1.txt's files and takes them again: other bytes at the names the
        // old state reads big-1.txt from.
        try KilledJoinRemoteChangedTests.freeAndTakeAgain(first, remote, removing: ["big-1.txt"],
                                                          writing: ["big-3.txt": String(repeating: "3", count: 300_000)])
        let oldTree = try second.tree()
        let oldNames = try Dictionary(uniqueKeysWithValues: oldTree.keys.filter { !$0.hasSuffix("/") }.map { ($0, try Self.storageNames(second, $0)) })
        let oldPages = try Self.pageNames(second)
        let before = try Files.files(second.folder)

        try second.usePattern(8)
        second.replacesPartialJoin = true
        let joined = try StorageCount.countedSync(second, remote)
        #expect(try second.tree() == first.tree())
        #expect(StorageCount.uneven(joined).isEmpty, "\(StorageCount.uneven(joined))")
        #expect(try StorageCount.files(second.folder) % Format.groupSize == 0)
        let joinedReport = try second.vault.check()
        #expect(joinedReport.isClean, "\(joinedReport.damagedItems) \(joinedReport.storageProblems)")

        let after = try Files.files(second.folder)
        let replaced = Set(before.keys.filter { after[$0] != nil && after[$0] != before[$0] })
        let lost = Set(oldNames.filter { !replaced.isDisjoint(with: $0.value) }.keys)
        // The test's own precondition: the join replaced a file the old state reads.
        try #require(lost.contains("big-1.txt"), "replaced: \(replaced.count), lost: \(lost)")
        #expect(replaced.isDisjoint(with: oldPages), "the join replaced an index page of the old state")

        // The old pattern: exactly those items fail to read, the rest as before; its check names them.
        try second.usePattern(SyncDevice.seed)
        for path in oldNames.keys.sorted() {
            if lost.contains(path) {
                let error = #expect(throws: VaultError.self) { _ = try second.read(path) }
                #expect(error?.description.hasPrefix("damaged data:") == true, "\(path): \(String(describing: error))")
            } else {
                #expect(try second.read(path) == oldTree[path], "\(path)")
            }
        }
        let report = try second.vault.check()
        #expect(Set(report.damagedItems.map(\.path)) == lost, "\(report.damagedItems)")
        #expect(report.damagedItems.allSatisfy { !$0.problems.isEmpty && $0.problems.allSatisfy { $0.hasSuffix("does not open") } },
                "\(report.damagedItems)")
        #expect(report.storageProblems.isEmpty, "\(report.storageProblems)")
    }

    /// The storage names of the chunks (or the pack) the item at `path` reads in `device`'s state.
    static func storageNames(_ device: SyncDevice, _ path: String) throws -> [String] {
        let id = try device.id(path)
        return try device.vault.state.withLock { state in
            let item = try #require(state.tree.allItems[id])
            let files = item.chunks.sorted { $0.key < $1.key }.map(\.value.fileNumber) + (item.packedMember.map { [$0.fileNumber] } ?? [])
            return try files.map { try state.name($0) }
        }
    }

    /// The storage names of the index pages of `device`'s state.
    static func pageNames(_ device: SyncDevice) throws -> Set<String> {
        try device.vault.state.withLock { state in
            try state.loadWholeIndex()
            let refs = state.committer.pageTable.pages.compactMap(\.ref) + state.committer.pageTable.parentRefs
            return Set(try refs.map { try state.name($0.fileNumber) })
        }
    }
}

/// The covers a join's placements bring (FORMAT.md §13.12: the group of fills with nothing
/// downloaded), and the storage's count of files after each placement.
final class CoverWatch: ForwardingStorageFolder, @unchecked Sendable {
    private let seen = Mutex<(covers: [String], replaced: Set<String>, counts: [Int], groups: [String])>(([], [], [], []))
    var covers: [String] { seen.withLock { $0.covers } }
    /// The names each placement put a download over.
    var replaced: Set<String> { seen.withLock { $0.replaced } }
    var countsAfter: [Int] { seen.withLock { $0.counts } }
    var groupSizes: [String] { seen.withLock { $0.groups } }

    override func placeDownloads(from downloads: DownloadFolder, replacing: [String], groups: [DownloadedGroup]) throws {
        try base.placeDownloads(from: downloads, replacing: replacing, groups: groups)
        let covers = groups.filter(\.downloaded.isEmpty).flatMap { $0.fill.map(\.name) }, count = try base.listFiles().count
        seen.withLock {
            $0.covers += covers
            $0.replaced.formUnion(replacing)
            $0.counts.append(count)
            $0.groups.append("place \(groups.map { $0.downloaded.count + $0.fill.count })")
        }
    }

    override func createGroup(_ files: [(name: String, contents: [UInt8])]) throws {
        try base.createGroup(files)
        seen.withLock { $0.groups.append("group \(files.count)") }
    }
}
