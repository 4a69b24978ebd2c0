import DotSafeTestSupport
import Synchronization
import Testing
import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A join's covers count the storage's files once a step, not once a group (FORMAT.md §13.12,
/// "A join's covers"; PERFORMANCE.md, "I/O-count tests"): the merge's step that makes the
/// other devices' groups whole listed the whole folder before each group it made, O(groups ×
/// files) for a big vault joined into a big storage. The storage holds this vault under another
/// pattern (a withdrawal since, §14.8), so that the join needs covers; the remote has devices
/// whose groups hold no file the join downloads, which that step makes whole.
@Suite(.serialized) struct JoinListingCountTests {
    @Test func aJoinsMergeListsTheStorageOnceForAllTheGroupsItMakesWhole() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try SyncedPatternChangeTests.withdrawnThenChanged(remote)
        defer { first.finish(); second.finish() }
        // Devices that joined and wrote nothing: their groups are random files only.
        for name in ["tablet", "phone", "studio"] {
            let device = try SyncDevice(name, seed: 8)
            defer { device.finish() }
            try device.sync(remote)
        }
        try first.sync(remote)
        let expected = try first.tree()

        try second.usePattern(8)
        second.replacesPartialJoin = true
        let watch = ListingWatch(try Storage.open(at: second.folder))
        try second.sync(remote, storage: watch) { _ in }
        #expect(try second.tree() == expected)
        #expect(try StorageCount.files(second.folder) % Format.groupSize == 0)
        let report = try second.vault.check()
        #expect(report.isClean, "\(report.damagedItems) \(report.storageProblems)")

        // The merge's groups: those after the join's last placement (and its folder sync), up
        // to the merge's folder sync.
        let log = watch.log
        let afterPlacing = log.lastIndex(of: "place").map { log.index(after: $0) } ?? log.startIndex
        let merge = log[afterPlacing...].drop { $0 == "syncFolder" }.prefix { $0 != "syncFolder" }
        let groups = merge.filter { $0.hasPrefix("group") }
        try #require(groups.count >= 3, "the merge made \(groups.count) groups whole: \(log)")
        let listings = merge.filter { $0 == "list" }.count
        #expect(listings <= 1, "\(listings) listings for the merge's \(groups.count) groups: \(merge.joined(separator: " "))")
        // Its covers still keep the count whole after each group (FORMAT.md §13.12).
        #expect(watch.countsAfterGroups.allSatisfy { $0 % Format.groupSize == 0 }, "\(watch.countsAfterGroups)")
    }
}

/// The storage calls that tell how a join counts the storage's files, in order: "list" (a
/// listing of the folder), "place" (a placement of downloads), "group n" (n files made at once,
/// as the merge makes a group whole), "syncFolder"; and the storage's count after each group.
final class ListingWatch: ForwardingStorageFolder, @unchecked Sendable {
    private let seen = Mutex<(log: [String], counts: [Int])>(([], []))
    var log: [String] { seen.withLock { $0.log } }
    var countsAfterGroups: [Int] { seen.withLock { $0.counts } }

    private func note(_ event: String) { seen.withLock { $0.log.append(event) } }

    override func listFiles() throws -> [String] {
        note("list")
        return try base.listFiles()
    }
    override func listAllNames() throws -> [String] {
        note("list")
        return try base.listAllNames()
    }
    override func placeDownloads(from downloads: DownloadFolder, replacing: [String], groups: [DownloadedGroup]) throws {
        note("place")
        try base.placeDownloads(from: downloads, replacing: replacing, groups: groups)
    }
    override func createGroup(_ files: [(name: String, contents: [UInt8])]) throws {
        note("group \(files.count)")
        try base.createGroup(files)
        // Through the base: not a listing of the vault's.
        let count = try base.listFiles().count
        seen.withLock { $0.counts.append(count) }
    }
    override func syncFolder() throws {
        note("syncFolder")
        try base.syncFolder()
    }
}
