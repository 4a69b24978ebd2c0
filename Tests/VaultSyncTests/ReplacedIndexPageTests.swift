import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// `--replace-partial-join` where the user is wrong and the join replaces an index page of the
/// state under the other pattern (FORMAT.md §13.12 "Replacing a partial join", what it costs):
/// the second device's state from before a withdrawal and a pattern change made on the first,
/// whose one index page is device 0's, as its last sync brought it. The owner frees files and
/// takes numbers again until one of its files is at that page's number (ADVERSARIES.md: the
/// user who types the option over a state it forgot). The join replaces the page and finishes,
/// the joined vault whole and clean; the old pattern then opens nothing: its writing open and
/// its read-only one (fsck's) fail on that page, and none of its items can be read. Real vaults
/// on disk, a real rclone, a local remote.
@Suite(.serialized) struct ReplacedIndexPageTests {
    typealias Files = SharedSyncTests

    @Test func theOptionsJoinOverAStateWhoseIndexPageItReplacesLeavesThatStateUnopened() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let big = ["big-1.txt": String(repeating: "1", count: 300_000), "big-2.txt": String(repeating: "2", count: 300_000)]
        let (first, second) = try SyncedPatternChangeTests.withdrawnThenChanged(remote, writing: big, writingOffline: false)
        defer { first.finish(); second.finish() }
        let (page, pageName) = try second.vault.state.withLock { state in
            try state.loadWholeIndex()
            let refs = state.committer.pageTable.pages.compactMap(\.ref) + state.committer.pageTable.parentRefs
            let page = try #require(refs.count == 1 ? refs.first?.fileNumber : nil, "\(refs.count) pages")
            return (page, try state.name(page))
        }
        try #require(FileRef(raw: page).device == 0, "the old state's page is its own: \(FileRef(raw: page))")

        var written: [String: String] = [:]
        for index in 3...10 { written["big-\(index).txt"] = String(repeating: "\(index)", count: 600_000) }
        try KilledJoinRemoteChangedTests.freeAndTakeAgain(first, remote, removing: ["big-1.txt", "big-2.txt"], writing: written)
        var rounds = 0
        while try !Self.references(first, page) && rounds < 6 {
            rounds += 1
            try first.write("more-\(rounds).txt", String(repeating: "m\(rounds)", count: 300_000))
            try first.reopen()
            try first.sync(remote)
        }
        try #require(try Self.references(first, page), "the owner never took the number of the old state's page again")
        let before = try Files.files(second.folder)

        try second.usePattern(8)
        second.replacesPartialJoin = true
        let joined = try StorageCount.countedSync(second, remote)
        #expect(try second.tree() == first.tree())
        #expect(StorageCount.uneven(joined).isEmpty, "\(StorageCount.uneven(joined))")
        let report = try second.vault.check()
        #expect(report.isClean, "\(report.damagedItems) \(report.storageProblems)")
        let after = try Files.files(second.folder), remoteFiles = try Files.files(try #require(remote.servedFolder))
        try #require(after[pageName] != before[pageName] && after[pageName] == remoteFiles[pageName], "the join did not replace the page")

        // The old pattern: nothing opens, writing or read-only (fsck's); the storage as the join left it.
        let damaged = "the vault's index is damaged: index page \(FileRef(raw: page)) does not open; nothing was changed"
        let writing = #expect(throws: VaultError.self) { _ = try SyncDevice.open(second.folder, seed: SyncDevice.seed) }
        #expect(writing?.description == damaged, "\(String(describing: writing))")
        let readOnly = #expect(throws: VaultError.self) {
            _ = try Vault.open(storage: try Storage.open(at: second.folder), secrets: try SyncDevice.secrets(SyncDevice.seed),
                               options: .likeDotsafe(readOnly: true))
        }
        #expect(readOnly?.description == damaged, "\(String(describing: readOnly))")
        #expect(try Files.files(second.folder) == after, "an open of the old pattern changed the storage")
    }

    /// Whether `device`'s state references the file at `number` (a chunk, a pack or a page).
    static func references(_ device: SyncDevice, _ number: UInt64) throws -> Bool {
        try device.vault.state.withLock { state in state.referencedFiles().contains { $0.file == number } }
    }
}
