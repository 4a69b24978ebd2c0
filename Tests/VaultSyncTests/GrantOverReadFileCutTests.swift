import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A grant another device made comes down in the place of the file at its number's own name
/// (FORMAT.md §14.9). The sharer takes a number it freed, while this device's committed root
/// may still read the file that was there (a chunk of a file the sharer removed since this
/// device's last sync): that file must stay until the merge's commit stops reading it, and the
/// count of files must stay in steps of 16 meanwhile (ADVERSARIES.md: the crash, the copier).
/// It was removed before that commit: a cut there left the committed root reading a missing file.
/// Real vaults on disk, a real rclone, a local remote.
@Suite(.serialized) struct GrantOverReadFileCutTests {
    @Test func aGrantAtANumberTheCommittedRootStillReadsComesInOnlyAfterTheMergesCommit() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let a = try SyncDevice("alice", seed: 0xA1), b = try SyncDevice("bob", seed: 0xB2)
        defer { a.finish(); b.finish() }
        let codeB = try b.vault.contactCode().code
        try b.reopen()
        // A's first data takes its lowest free numbers, before its index pages.
        try a.write("gone.bin", String(repeating: "g", count: 70_000))
        try a.write("hello.txt", "hello from alice")
        try a.sync(remote)
        let laptop = try SyncDevice("alice-laptop", seed: 0xA1)
        defer { laptop.finish() }
        try laptop.sync(remote)

        // A removes the file and syncs, so that the remote no longer reads its numbers either:
        // they are free on A, and the share takes the lowest. The laptop's root still reads it.
        try a.vault.remove(Array("gone.bin".utf8), from: Vault.rootID)
        try a.vault.commit()
        try a.sync(remote)
        try a.vault.share(with: codeB)
        try a.reopen()
        try a.sync(remote)
        let grants = try GrantCountCutTests.grants(a)
        try #require(grants.count == 1, "\(grants)")
        let grant = grants.keys.first!, place = grants[grant]!
        let number = try a.vault.state.withLock { state in
            try #require(state.committer.formatTwo?.specialFiles.first { $0.isGrantFile }).file.raw
        }
        let read = laptop.vault.state.withLock { state in state.referencedFiles().contains { $0.file == number } }
        try #require(read, "the laptop's committed root reads the file at the grant's number")
        let readBytes = try #require(FileManager.default.contents(atPath: laptop.folder + "/" + place))
        let bytes = try #require(FileManager.default.contents(atPath: a.folder + "/" + grant))
        let before = try laptop.tree(), expected = try a.tree()
        #expect(before["gone.bin"] != nil && expected["gone.bin"] == nil)

        var run = try CutSyncRun(laptop, remote, before: before, expected: expected)
        defer { run.remove() }

        // The sync counted: whole groups before each mutation, and the file the committed root
        // read is at its name, as it was, until the merge's commit.
        let counting = CutStorageFolder(try Storage.open(at: laptop.folder), cutAt: nil, countsFiles: true)
        try laptop.sync(remote, storage: counting) { _ in }
        #expect(try laptop.tree() == expected)
        #expect(GrantCountCutTests.uneven(counting).isEmpty, "files before mutation: \(GrantCountCutTests.uneven(counting))")
        #expect(try GrantCountCutTests.count(laptop.folder) % Format.groupSize == 0)
        #expect(FileManager.default.contents(atPath: laptop.folder + "/" + grant) == bytes, "the grant is here as A wrote it")
        #expect(!laptop.storageNames.contains(place), "the grant took its number's place")
        #expect(try laptop.vault.check().isClean)

        // Cut at each mutation of the sync: the laptop reads every byte of what it read before
        // or of the merged tree, checks clean (a read-only open right after the cut too), with
        // whole groups; while its root still reads the file, that file is there as it was.
        run.inspect = { place in
            let files = try GrantCountCutTests.count(laptop.folder)
            #expect(files % Format.groupSize == 0, "\(place): \(files) files")
            let stillRead = laptop.vault.state.withLock { state in state.referencedFiles().contains { $0.file == number } }
            if stillRead {
                #expect(FileManager.default.contents(atPath: laptop.folder + "/" + grants[grant]!) == readBytes, "\(place): the file read")
            }
            guard place.hasSuffix("then a sync") else { return }
            #expect(FileManager.default.contents(atPath: laptop.folder + "/" + grant) == bytes, "\(place): the grant")
            #expect(!laptop.storageNames.contains(grants[grant]!), "\(place): its number's name")
        }
        var failures: [String] = []
        for cut in 0..<counting.mutations {
            // A storage that no longer opens after the cut is a failure of that cut, not the end.
            do { failures += try run.cut(at: cut, seeing: true) } catch {
                failures.append("cut before mutation \(cut): \(error); opens: \(laptop.reopenFailure.map { "no, \($0)" } ?? "yes")")
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        try run.finish(with: a)
        #expect(try GrantCountCutTests.count(try #require(remote.servedFolder)) % Format.groupSize == 0)
    }
}
