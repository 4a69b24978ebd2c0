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
    /// The storage's files (names of the storage's form; a download folder is not one).
    static func count(_ folder: String) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: folder).filter(FileName.isWellFormed).count
    }

    @Test func aJoinKeepsWholeGroupsAtEveryMutationAndResumesFromACutAtAny() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let first = try SyncedPatternChangeTests.syncedLaptop(remote)
        defer { first.finish() }
        let expected = try first.tree()

        // One join, counted: the storage's files before each of its mutations are what a copy
        // taken at any instant between two of them holds.
        let counter = try SyncDevice("desktop-count")
        defer { counter.finish() }
        let counting = CutStorageFolder(try Storage.open(at: counter.folder), cutAt: nil, countsFiles: true)
        var committed = 0
        try counter.sync(remote, storage: counting) { step in
            if step == "upload" { committed = counting.mutations }
        }
        #expect(try counter.tree() == expected)
        let uneven = zip(counting.done, counting.countsBefore).enumerated().filter { $0.element.1 % Format.groupSize != 0 }
        #expect(uneven.isEmpty, "files before mutation: \(uneven.map { "\($0.offset) (\($0.element.0)): \($0.element.1)" })")
        #expect(try Self.count(counter.folder) % Format.groupSize == 0)
        let placed = try #require(counting.done.firstIndex(of: "placeDownloads"), "\(counting.done)")
        #expect(committed > placed + 1, "the join's commit came after its placements: \(counting.done)")

        // Cut at each mutation from the first placement to the commit, from the same empty
        // storage: whole groups after the cut, and the next sync brings the remote's vault.
        let second = try SyncDevice("desktop")
        defer { second.finish() }
        var run = try CutSyncRun(second, remote, before: try second.tree(), expected: expected)
        defer { run.remove() }
        run.inspect = { place in
            let files = try Self.count(second.folder)
            #expect(files % Format.groupSize == 0, "\(place): \(files) files")
        }
        var failures: [String] = []
        for cut in placed + 1...committed { failures += try run.cut(at: cut, seeing: true) }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        #expect(try second.read("file-3.txt") == String(repeating: "3", count: 300_000))
        #expect(try second.vault.check().isClean)
        try run.finish(with: first)
    }
}
