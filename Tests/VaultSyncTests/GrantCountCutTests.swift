import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A grant another device of the vault made comes down into this storage in the place of the
/// file at its number's own name (FORMAT.md §14.9), so that the count of files stays in steps of
/// 16 at every instant (§3; ADVERSARIES.md: the copier, the crash). It came down alone (+1) and
/// that file went only at the merge's end (-1): a copy between the two, or a kill there, showed
/// a count off a multiple of 16. Real vaults on disk, a real rclone, a local remote.
@Suite(.serialized) struct GrantCountCutTests {
    @Test func theSharersOtherDeviceTakesTheGrantDownInWholeGroupsAndResumesFromACutAtAny() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let a = try SyncDevice("alice", seed: 0xA1), b = try SyncDevice("bob", seed: 0xB2)
        defer { a.finish(); b.finish() }
        let codeB = try b.vault.contactCode().code
        try b.reopen()
        try a.write("hello.txt", "hello from alice")
        try a.sync(remote)
        let laptop = try SyncDevice("alice-laptop", seed: 0xA1)
        defer { laptop.finish() }
        try laptop.sync(remote)

        // A shares with B and writes on: the laptop's next sync takes the grant and a chunk down.
        try a.vault.share(with: codeB)
        try a.reopen()
        try a.write("after-share.txt", String(repeating: "s", count: 70_000))
        try a.sync(remote)
        let grant = try StorageCount.onlyGrant(a).name
        let bytes = try #require(FileManager.default.contents(atPath: a.folder + "/" + grant))
        let expected = try a.tree()

        var run = try CutSyncRun(laptop, remote, before: try laptop.tree(), expected: expected)
        defer { run.remove() }

        let counting = try StorageCount.countedSync(laptop, remote)
        #expect(try laptop.tree() == expected)
        #expect(StorageCount.uneven(counting).isEmpty, "files before mutation: \(StorageCount.uneven(counting))")
        #expect(try StorageCount.files(laptop.folder) % Format.groupSize == 0)
        let held = try StorageCount.grants(laptop)
        #expect(held.keys.sorted() == [grant])
        #expect(FileManager.default.contents(atPath: laptop.folder + "/" + grant) == bytes, "the grant is here as A wrote it")
        #expect(!laptop.storageNames.contains(try #require(held[grant])), "the grant took its number's place")

        // Cut at each mutation of the sync: whole groups after the cut and after the next sync,
        // which brings the grant as it is and the merged tree.
        let failures = try StorageCount.cutEach(&run, 0..<counting.mutations) { (place: String) throws in
            guard place.hasSuffix("then a sync") else { return }
            #expect(FileManager.default.contents(atPath: laptop.folder + "/" + grant) == bytes, "\(place): the grant")
            let number = try StorageCount.grants(laptop)[grant]
            #expect(number.map { !laptop.storageNames.contains($0) } == true, "\(place): its number's name")
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        try run.finish(with: a)
        #expect(try StorageCount.files(try #require(remote.servedFolder)) % Format.groupSize == 0)
    }

    /// A grantee's device holds every grant of the vault but its own record: A's grant to C
    /// comes down into B's storage as into A's other devices'.
    @Test func aGranteesSyncTakesAnotherGrantDownInWholeGroups() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let trio = try SharingTrio()
        defer { trio.finish() }
        let (a, b, codeA, codeB, codeC) = (trio.a, trio.b, trio.codeA, trio.codeB, trio.codeC)
        try a.vault.share(with: codeB)
        try a.reopen()
        try a.sync(remote)
        let sharedB = try SyncDevice("bob", sharedWith: b, by: codeA)
        try sharedB.sync(remote)

        try a.vault.share(with: codeC)
        try a.reopen()
        try a.sync(remote)
        let toC = try #require(try StorageCount.grants(a).keys.first { !sharedB.storageNames.contains($0) })
        let bytes = try #require(FileManager.default.contents(atPath: a.folder + "/" + toC))

        let counting = try StorageCount.countedSync(sharedB, remote)
        #expect(try sharedB.read("hello.txt") == "hello from alice")
        #expect(StorageCount.uneven(counting).isEmpty, "files before mutation: \(StorageCount.uneven(counting))")
        #expect(try StorageCount.files(sharedB.folder) % Format.groupSize == 0)
        #expect(FileManager.default.contents(atPath: sharedB.folder + "/" + toC) == bytes, "the grant to C is here as A wrote it")
        let number = try StorageCount.grants(sharedB)[toC]
        #expect(number.map { !sharedB.storageNames.contains($0) } == true, "the grant took its number's place")
        #expect(try sharedB.vault.check().isClean)
        try sharedB.vault.lock()
    }
}
