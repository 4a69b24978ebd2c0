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
    /// A shares with B at a number it freed, which the laptop's committed root still reads.
    struct Scene {
        let remote: TestRemote, a: SyncDevice, b: SyncDevice, laptop: SyncDevice
        /// The grant's name, its number's name and FileRef, its bytes.
        var grant = "", place = "", number: UInt64 = 0, bytes: [UInt8] = []

        init() throws {
            remote = try TestRemote(.local)
            a = try SyncDevice("alice", seed: 0xA1)
            b = try SyncDevice("bob", seed: 0xB2)
            laptop = try SyncDevice("alice-laptop", seed: 0xA1)
        }

        mutating func share() throws {
            let codeB = try b.vault.contactCode().code
            try b.reopen()
            // A's first data takes its lowest free numbers, before its index pages.
            try a.write("gone.bin", String(repeating: "g", count: 70_000))
            try a.write("hello.txt", "hello from alice")
            try a.sync(remote)
            try laptop.sync(remote)

            // A removes the file and syncs, so that the remote no longer reads its numbers
            // either: they are free on A, and the share takes the lowest. The laptop's root
            // still reads it.
            try a.vault.remove(Array("gone.bin".utf8), from: Vault.rootID)
            try a.vault.commit()
            try a.sync(remote)
            try KeptOverDeleteSyncTests.releaseReadRootPins(a, remote, rewriting: "hello.txt")
            try a.vault.share(with: codeB)
            try a.reopen()
            try a.sync(remote)
            (grant, place) = try StorageCount.onlyGrant(a)
            number = try a.vault.state.withLock { state in
                try #require(state.committer.formatTwo?.specialFiles.first { $0.isGrantFile }).file.raw
            }
            try #require(readsNumber(), "the laptop's committed root reads the file at the grant's number")
            bytes = try #require(FileManager.default.contents(atPath: a.folder + "/" + grant)).map { $0 }
        }

        func readsNumber() -> Bool {
            laptop.vault.state.withLock { state in state.referencedFiles().contains { $0.file == number } }
        }

        /// The laptop holds the grant as A wrote it, in its number's place, with whole groups.
        func laptopHoldsTheGrant(_ place: String) throws {
            #expect(FileManager.default.contents(atPath: laptop.folder + "/" + grant).map { [UInt8]($0) } == bytes, "\(place): the grant")
            #expect(!laptop.storageNames.contains(self.place), "\(place): its number's name")
            #expect(try StorageCount.files(laptop.folder) % Format.groupSize == 0, "\(place): whole groups")
        }

        func finish() {
            for device in [a, b, laptop] { device.finish() }
            remote.finish()
        }
    }

    @Test func aGrantAtANumberTheCommittedRootStillReadsComesInOnlyAfterTheMergesCommit() throws {
        var scene = try Scene()
        defer { scene.finish() }
        try scene.share()
        #expect(try scene.laptop.tree()["gone.bin"] != nil && scene.a.tree()["gone.bin"] == nil)
        try Self.countAndCut(scene, mountRounds: 0)
    }

    /// The same as two rounds of a mount (one open vault, as `mount --sync` keeps it): the first
    /// round's merge and commit, the grant's download into its number's place in the second.
    /// After each cut's next sync, a writing mount's round too holds the merged tree and the
    /// grant, and checks clean; Bob's grant then still opens the vault.
    @Test func aMountsRoundsCutAtAnyMutationLeaveTheGrantToTheNextSyncAndRound() throws {
        var scene = try Scene()
        defer { scene.finish() }
        try scene.share()
        let (a, laptop, remote) = (scene.a, scene.laptop, scene.remote)
        let expected = try a.tree()
        try Self.countAndCut(scene, mountRounds: 2) { place in
            try laptop.mountRound(remote)
            #expect(try laptop.tree() == expected, "\(place), then a round")
            try scene.laptopHoldsTheGrant(place + ", then a round")
            let report = try laptop.vault.check()
            #expect(report.isClean, "\(place), then a round: \(report.damagedItems) \(report.storageProblems)")
        }

        let codeA = try a.vault.contactCode().code
        try a.reopen()
        let sharedB = try SyncDevice("bob", sharedWith: scene.b, by: codeA)
        try sharedB.sync(remote)
        #expect(try sharedB.read("hello.txt") == "hello from alice")
        try sharedB.vault.lock()
    }

    /// The laptop's sync (`mountRounds` 0) or a mount's rounds, counted (whole groups before each
    /// mutation, the grant in its number's place at the end), then cut at each mutation: the
    /// laptop reads every byte of what it read before or of the merged tree, checks clean (a
    /// read-only open right after the cut too), with whole groups; while its root still reads
    /// the file, that file is there as it was; the next sync brings the grant (then `more`).
    static func countAndCut(_ scene: Scene, mountRounds: Int, more: ((_ place: String) throws -> Void)? = nil) throws {
        let (a, laptop, remote) = (scene.a, scene.laptop, scene.remote)
        let readBytes = try #require(FileManager.default.contents(atPath: laptop.folder + "/" + scene.place))
        let expected = try a.tree()
        var run = try CutSyncRun(laptop, remote, before: try laptop.tree(), expected: expected)
        run.mountRounds = mountRounds
        defer { run.remove() }

        let counting = try mountRounds > 0 ? StorageCount.countedMountRounds(laptop, remote, mountRounds)
            : StorageCount.countedSync(laptop, remote)
        #expect(try laptop.tree() == expected)
        #expect(StorageCount.uneven(counting).isEmpty, "files before mutation: \(StorageCount.uneven(counting))")
        try scene.laptopHoldsTheGrant("counted")
        #expect(try laptop.vault.check().isClean)

        run.inspect = { place in
            let files = try StorageCount.files(laptop.folder)
            #expect(files % Format.groupSize == 0, "\(place): \(files) files")
            if scene.readsNumber() {
                #expect(FileManager.default.contents(atPath: laptop.folder + "/" + scene.place) == readBytes, "\(place): the file read")
            }
            guard place.hasSuffix("then a sync") else { return }
            try scene.laptopHoldsTheGrant(place)
            try more?(place)
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
        #expect(try StorageCount.files(try #require(remote.servedFolder)) % Format.groupSize == 0)
    }

    /// A mount's round takes the same case: the file stays read until the round's commit, and
    /// the next round brings the grant into its place (a round fetches before it merges, so the
    /// grant, which the committed root did not list yet, waits for that one).
    @Test func aMountsRoundsTakeAGrantAtANumberTheCommittedRootStillReads() throws {
        var scene = try Scene()
        defer { scene.finish() }
        try scene.share()
        let laptop = scene.laptop, expected = try scene.a.tree()
        try laptop.mountRound(scene.remote)
        #expect(try laptop.tree() == expected)
        #expect(try laptop.vault.check().isClean)
        #expect(try StorageCount.files(laptop.folder) % Format.groupSize == 0, "after the first round")
        try laptop.mountRound(scene.remote)
        #expect(try laptop.tree() == expected)
        try scene.laptopHoldsTheGrant("after the second round")
        #expect(try laptop.vault.check().isClean)
    }
}
