import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A join (a device's first sync into a vault on a remote, FORMAT.md §13.11–§13.12) keeps the
/// storage's count of files in steps of 16 at every instant (§3; ADVERSARIES.md: the copier,
/// the crash). Device 0's numbers 0 and 1 and the owner record's are the join's slots and
/// record, at names of their own that only its commit writes: device 0's group 0 came down with
/// 13 files, until that commit. Now it comes down whole, those three as stand-ins that the
/// commit writes and renames to the slots and the record; cut anywhere, the next sync resumes.
@Suite(.serialized) struct JoinCountCutTests {
    /// A join of `device` from `remote`, counted (`StorageCount.countedSync`), with the number
    /// of its mutations before its first change of the remote: all but that change's own.
    static func countedJoin(_ device: SyncDevice, _ remote: TestRemote) throws -> (CutStorageFolder, committed: Int) {
        var committed = 0
        let counting = try StorageCount.countedSync(device, remote) { change, mutations in
            if change == "upload" { committed = mutations }
        }
        return (counting, committed)
    }

    @Test func aJoinKeepsWholeGroupsAtEveryMutationAndResumesFromACutAtAny() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let first = try SyncedPatternChangeTests.syncedLaptop(remote)
        defer { first.finish() }
        let expected = try first.tree()

        // One join, counted.
        let counter = try SyncDevice("desktop-count")
        defer { counter.finish() }
        let (counting, committed) = try JoinCountCutTests.countedJoin(counter, remote)
        #expect(try counter.tree() == expected)
        #expect(StorageCount.uneven(counting).isEmpty, "files before mutation: \(StorageCount.uneven(counting))")
        #expect(try StorageCount.files(counter.folder) % Format.groupSize == 0)
        let placed = try #require(counting.done.firstIndex(of: "placeDownloads"), "\(counting.done)")
        #expect(committed > placed + 1, "the join's commit came after its placements: \(counting.done)")

        // Cut at each mutation from the first placement to the commit, from the same empty
        // storage: whole groups after the cut, and the next sync brings the remote's vault.
        let second = try SyncDevice("desktop")
        defer { second.finish() }
        var run = try CutSyncRun(second, remote, before: try second.tree(), expected: expected)
        defer { run.remove() }
        let failures = try StorageCount.cutEach(&run, placed + 1...committed)
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        #expect(try second.read("file-3.txt") == String(repeating: "3", count: 300_000))
        #expect(try second.vault.check().isClean)
        try run.finish(with: first)
    }
}
