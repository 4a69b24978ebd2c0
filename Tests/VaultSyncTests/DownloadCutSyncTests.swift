import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultCrypto
import VaultStore
@testable import VaultSync

/// A sync killed while it downloads a merge's files (R-SYN-5). The other device reuses the files
/// of its own that its later roots freed, so a file name the victim's last commit references
/// (under the old key) can come down with new bytes: written at that name before the merge's
/// commit, a kill in between left the victim's committed items on bytes that no longer open
/// ("chunk 1 of 3 does not open"). Cut at each write of the download, in turn: the victim's
/// storage stays clean and every file reads, and the next sync brings both devices' files.
@Suite(.serialized) struct DownloadCutSyncTests {
    static func text(_ letter: Character, _ count: Int) -> String { String(repeating: letter, count: count) }

    /// The second device's three chunks, which the first device holds, come back in the files
    /// the first version took, two versions later; the first device made a file meanwhile.
    /// Returns the first device's tree before its sync and the tree both end with.
    static func scenario(_ remote: TestRemote) throws -> (first: SyncDevice, second: SyncDevice, before: [String: String],
                                                          expected: [String: String]) {
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        try second.write("big.bin", Self.text("a", 600_000))
        try second.write("small.txt", Self.text("s", 700))
        try second.sync(remote)
        try first.sync(remote)
        try second.write("big.bin", Self.text("b", 600_000))
        try second.sync(remote)
        try KeptOverDeleteSyncTests.releaseReadRootPins(second, remote)
        try second.write("big.bin", Self.text("c", 600_000))
        try second.write("small.txt", Self.text("t", 700))
        try second.write("notes.txt", "notes v2 from the second")
        try second.sync(remote)
        try first.write("from-first.txt", "made on the first")
        let before = try first.tree()
        let expected = before.merging([
            "big.bin": Self.text("c", 600_000), "small.txt": Self.text("t", 700), "notes.txt": "notes v2 from the second",
        ]) { _, new in new }
        return (first, second, before, expected)
    }

    /// `mounted`: a mount's round (`mount --sync`), which stages its downloads the same way.
    @Test(arguments: [false, true])
    func aSyncKilledAtAnyWriteOfItsDownloadLosesNothing(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second, before, expected) = try Self.scenario(remote)
        defer { first.finish(); second.finish() }

        let victim = try first.snapshot(), remoteCopy = remote.path + "-copy"
        try FileManager.default.copyItem(atPath: remote.path, toPath: remoteCopy)
        defer { try? FileManager.default.removeItem(atPath: remoteCopy) }

        var cut = 1, failures: [String] = [], cutsInFolder = 0
        while true {
            try first.restore(from: victim)
            try SyncDevice.copyFiles(from: remoteCopy, to: remote.path)
            do {
                let writes = try first.sync(remote, cuttingDownloadAt: cut, mounted: mounted)
                #expect(writes > 1, "the download wrote files: \(writes)")
                break
            } catch is SyncDevice.Stop {}
            // Before any writing open: what `dotsafe fsck` and an observer see (R-BLK-5).
            #expect(first.seenAfterCut.isEmpty, "cut at write \(cut), read-only: \(first.seenAfterCut)")
            #expect(first.leftAfterCut.allSatisfy { $0.hasSuffix(".downloading") }, "cut at write \(cut): \(first.leftAfterCut)")
            if !first.leftAfterCut.isEmpty { cutsInFolder += 1 }
            #expect(try first.otherEntries().isEmpty, "cut at write \(cut): the writing open removed the download folder")
            let report = try first.vault.check()
            let tree = try? first.tree()
            if !report.isClean || tree != before {
                failures.append("cut at write \(cut): \(report.damagedItems) \(report.storageProblems), reads: \(tree == before)")
            }
            #expect(report.isClean, "cut at write \(cut): \(report.damagedItems) \(report.storageProblems)")
            #expect(tree == before, "cut at write \(cut): every file reads as before the sync")
            let next = try first.sync(remote, mounted: mounted)
            #expect(next.conflicts == 0, "cut at write \(cut): \(next.actions)")
            #expect(try first.tree() == expected, "cut at write \(cut): the next sync brings both devices' files")
            cut += 1
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        #expect(cutsInFolder > 0, "a cut inside the direct batch left its half file in the download folder")
        #expect(try first.otherEntries().isEmpty, "a completed sync leaves nothing but the storage's files")
        try second.sync(remote)
        #expect(try first.tree() == expected)
        #expect(try second.tree() == expected)
        for device in [first, second] {
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.damagedItems) \(report.storageProblems)")
        }
    }

    /// Not a cut: `SEED=30155 tools/sync-crash-trials 5` found a plain sync that damaged the
    /// other device's small files. The second device's new pack took a file that the first
    /// device's last commit still references (a chunk of an older big.bin), so it came down
    /// staged; it has a gap (a deleted member), and the merge's commit compacted it, reading the
    /// old chunk's bytes at its name as the members: "pack member does not open" on the first
    /// device, and its remote root damaged for every other ("file 1:10 does not open under its
    /// key"). Another device's pack is that device's to compact (FORMAT.md §7.2).
    @Test(arguments: [false, true])
    func anotherDevicesPackThatCameDownStagedReadsWholeAfterTheMerge(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try second.write("big.bin", Self.text("a", 600_000))
        try second.sync(remote)
        try first.sync(remote)
        try second.write("big.bin", Self.text("b", 600_000))
        try second.sync(remote)
        try KeptOverDeleteSyncTests.releaseReadRootPins(second, remote)
        // Version a's files are free now: the new pack takes the lowest of them.
        try second.vault.remove(Array("big.bin".utf8), from: Vault.rootID)
        let small = (1...3).map { ("small-\($0).txt", String(repeating: Character(UnicodeScalar(UInt8(100 + $0))), count: 900 + $0)) }
        for (name, text) in small { try second.write(name, text) }
        try second.vault.remove(Array("small-1.txt".utf8), from: Vault.rootID)
        try second.vault.commit()
        try second.sync(remote)
        try first.write("from-first.txt", "made on the first")

        // (No cut: the downloads are copied file by file, the staged ones counted.)
        _ = try first.sync(remote, cuttingDownloadAt: .max, mounted: mounted)
        #expect(first.stagedDownloads > 0, "the pack came down staged, over a file of the first's last commit")
        var expected = try second.tree()
        expected["from-first.txt"] = "made on the first"
        #expect(try first.tree() == expected)
        try second.sync(remote)
        #expect(try second.tree() == expected)
        for device in [first, second] {
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.damagedItems) \(report.storageProblems)")
        }
    }

    /// Killed between the merge's commit point and putting its staged files in place (their
    /// replace fails here, as a process that died there): the next open puts them in place
    /// before it reads a page, and the merged state reads whole.
    @Test func aSyncKilledAfterItsCommitPointIsFinishedByTheNextOpen() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second, _, expected) = try Self.scenario(remote)
        defer { first.finish(); second.finish() }

        let folder = try first.reopen { ReplaceCutFolder($0) }
        #expect(throws: (any Error).self) { try first.sync(remote) }
        #expect(folder.cuts == 1, "the merge's commit staged files and stopped at the first replace")
        first.vault.discard()
        // Read-only (fsck without repairs), nothing is put in place: the targets read from
        // their staged files.
        let readOnly = try Vault.open(storage: try Storage.open(at: first.folder), secrets: SyncDevice.secrets(SyncDevice.seed),
                                      options: Vault.Options(readOnly: true, cacheBytes: 8 << 20))
        let seen = try readOnly.check()
        #expect(seen.isClean && seen.chunksChecked == 3, "read-only: \(seen.damagedItems) \(seen.storageProblems)")
        try readOnly.lock()
        first.reopenAfterCrash()
        let report = try first.vault.check()
        #expect(report.isClean, "\(report.damagedItems) \(report.storageProblems)")
        #expect(try first.tree() == expected, "the merge was committed; its staged files are in place")
        try first.sync(remote)
        try second.sync(remote)
        #expect(try first.tree() == expected)
        #expect(try second.tree() == expected)
    }
}

/// The storage folder of a disk, whose `replace` fails once: a process that died there.
final class ReplaceCutFolder: ForwardingStorageFolder, @unchecked Sendable {
    // @unchecked: `cuts` is touched by the one thread of a test's sync.
    struct Cut: Error {}
    private(set) var cuts = 0

    override func replace(_ name: String, contents: [UInt8]) throws {
        cuts += 1
        if cuts == 1 { throw Cut() }
        try base.replace(name, contents: contents)
    }
}
