import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// `sync --replace-partial-join` where the user is wrong (FORMAT.md §13.12, "Replacing a
/// partial join"): the storage holds this vault under another pattern from before a withdrawal
/// (§14.8), whose slots and record lie at names only its pattern derives, beside the groups the
/// join makes whole. The join's covers (§13.12, "A join's covers") keep the count in steps of 16
/// before every mutation of the join, after a cut at each one (ADVERSARIES.md: the copier, the
/// crash), and after the next sync, which brings the remote's vault, fsck clean.
@Suite(.serialized) struct ReplacedStateCountCutTests {
    @Test func theOptionsJoinOverAnotherPatternsStateKeepsWholeGroupsAtEveryMutationAndResumesFromACutAtAny() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try SyncedPatternChangeTests.withdrawnThenChanged(remote)
        defer { first.finish(); second.finish() }
        let expected = try first.tree()
        try second.usePattern(8)
        second.replacesPartialJoin = true
        let before = try StorageCount.files(second.folder)
        // The start of every cut below: the storage and the remote as they are now.
        var run = try CutSyncRun(second, remote, before: try second.tree(), expected: expected)
        defer { run.remove() }

        // One join, counted: the groups it makes whole hold the old state's files at some of
        // their names, so that what it adds is no multiple of 16 without its covers.
        let (counting, committed) = try JoinCountCutTests.countedJoin(second, remote)
        #expect(try second.tree() == expected)
        #expect(StorageCount.uneven(counting).isEmpty, "files before mutation: \(StorageCount.uneven(counting))")
        let after = try StorageCount.files(second.folder)
        #expect(after % Format.groupSize == 0, "\(after) files")
        let report = try second.vault.check()
        #expect(report.isClean, "\(report.damagedItems) \(report.storageProblems)")
        let placed = try #require(counting.done.firstIndex(of: "placeDownloads"), "\(counting.done)")
        #expect(committed > placed + 1, "the join's commit came after its placements: \(counting.done)")
        #expect(after > before)

        // Cut at each mutation from the first placement to the commit: whole groups after the
        // cut, and the next sync (with the option still) brings the remote's vault.
        let failures = try StorageCount.cutEach(&run, placed + 1...committed)
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        #expect(try second.vault.check().isClean)
        try run.finish(with: first)
    }
}
