import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
@testable import VaultSync

/// Small files sit as members of packs (FORMAT.md §7.2), and compaction moves a member under
/// its key. `SEED=21220 tools/sync-crash-trials 3` found: the device that deleted a pack's
/// largest member compacted that pack into its own tail (it was the pack with the most free
/// tail), so its members moved within one pack file under the same keys; the other device,
/// comparing only (file, key) with what it held, did not fetch that file again and read the
/// moved members at offsets its old copy does not hold (EIO, fsck's "pack member does not open").
@Suite(.serialized) struct PackMoveSyncTests {
    @Test func membersMovedByTheOtherDevicesCompactionStillReadAfterTheMerge() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }

        // One pack of the second device: a large member first, then three small ones.
        let small = (1...3).map { ("small-\($0).txt", String(repeating: Character(UnicodeScalar(UInt8(96 + $0))), count: 900 + $0)) }
        try second.write("large.txt", String(repeating: "L", count: 200_000))
        for (name, text) in small { try second.write(name, text) }
        try second.sync(remote)
        try first.sync(remote)
        for (name, text) in small { #expect(try first.read(name) == text, "\(name) before the compaction") }

        // Its delete leaves the pack nearly empty: the commit compacts it.
        try second.vault.remove(Array("large.txt".utf8), from: Vault.rootID)
        try second.vault.commit()
        try first.write("from-first.txt", "made on the first")
        try second.sync(remote)
        let merged = try first.sync(remote)
        #expect(merged.conflicts == 0, "\(merged.actions)")
        try second.sync(remote)

        for device in [first, second] {
            for (name, text) in small { #expect(try device.read(name) == text, "\(device.name): \(name)") }
            #expect(try device.read("from-first.txt") == "made on the first", "\(device.name)")
            #expect((try? device.id("large.txt")) == nil, "\(device.name): the delete holds")
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.damagedItems) \(report.storageProblems)")
        }
        #expect(try second.tree() == first.tree())
    }
}
