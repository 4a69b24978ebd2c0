import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
@testable import VaultSync

/// A sync killed while it downloads a merge's files (R-SYN-5). The other device reuses the files
/// of its own that its later roots freed, so a file name the victim's last commit references
/// (under the old key) can come down with new bytes: written at that name before the merge's
/// commit, a kill in between left the victim's committed items on bytes that no longer open
/// ("chunk 1 of 3 does not open"). Cut at each write of the download, in turn: the victim's
/// storage stays clean and every file reads, and the next sync brings both devices' files.
@Suite(.serialized) struct DownloadCutSyncTests {
    static func text(_ letter: Character, _ count: Int) -> String { String(repeating: letter, count: count) }

    @Test func aSyncKilledAtAnyWriteOfItsDownloadLosesNothing() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }

        // Three chunks of the second device's, which the first device then holds.
        try second.write("big.bin", Self.text("a", 600_000))
        try second.write("small.txt", Self.text("s", 700))
        try second.sync(remote)
        try first.sync(remote)
        // Two versions later its chunks are back in the files the first version took.
        try second.write("big.bin", Self.text("b", 600_000))
        try second.sync(remote)
        try second.write("big.bin", Self.text("c", 600_000))
        try second.write("small.txt", Self.text("t", 700))
        try second.write("notes.txt", "notes v2 from the second")
        try second.sync(remote)
        try first.write("from-first.txt", "made on the first")

        let before = try first.tree()
        let expected = before.merging([
            "big.bin": Self.text("c", 600_000), "small.txt": Self.text("t", 700), "notes.txt": "notes v2 from the second",
        ]) { _, new in new }
        let victim = try first.snapshot(), remoteCopy = remote.path + "-copy"
        try FileManager.default.copyItem(atPath: remote.path, toPath: remoteCopy)
        defer { try? FileManager.default.removeItem(atPath: remoteCopy) }

        var cut = 1, failures: [String] = []
        while true {
            try first.restore(victim)
            try SyncDevice.copyFolder(remoteCopy, over: remote.path)
            do {
                let writes = try first.sync(remote, cuttingDownloadAt: cut)
                #expect(writes > 1, "the download wrote files: \(writes)")
                break
            } catch is SyncDevice.Stop {}
            let report = try first.vault.check()
            let tree = try? first.tree()
            if !report.isClean || tree != before {
                failures.append("cut at write \(cut): \(report.damagedItems) \(report.storageProblems), reads: \(tree == before)")
            }
            #expect(report.isClean, "cut at write \(cut): \(report.damagedItems) \(report.storageProblems)")
            #expect(tree == before, "cut at write \(cut): every file reads as before the sync")
            let next = try first.sync(remote)
            #expect(next.conflicts == 0, "cut at write \(cut): \(next.actions)")
            #expect(try first.tree() == expected, "cut at write \(cut): the next sync brings both devices' files")
            cut += 1
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        try second.sync(remote)
        #expect(try first.tree() == expected)
        #expect(try second.tree() == expected)
        for device in [first, second] {
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.damagedItems) \(report.storageProblems)")
        }
    }
}
