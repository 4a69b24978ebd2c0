import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
@testable import VaultSync

/// `dotsafe fsck` (`Vault.check`) of a storage that holds two devices' groups after a sync: clean
/// as it is, and damage in a file the other device wrote is found and named.
@Suite(.serialized) struct MultiDeviceCheckTests {
    @Test func aStorageWithTwoDevicesGroupsChecksCleanAndNamesDamageInTheOthersFile() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        // The second device writes a file of three chunks; the first brings it down.
        try second.write("from-second.bin", "")
        try second.write("from-second.bin", bytes: (0..<(3 * Vault.Limits.payloadSize)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try second.sync(remote)
        let before = first.storageNames
        try first.sync(remote)
        let downloaded = first.storageNames.subtracting(before).sorted()
        #expect(!downloaded.isEmpty)

        for device in [first, second] {
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.storageProblems) \(report.damagedItems)")
            #expect(report.items >= 5 && report.chunksChecked >= 3)
        }

        // One of the files that came from the second device holds a chunk of its file: damaged,
        // it is reported by the item's path (others may be free files of its groups, or pages
        // the first device's root no longer uses).
        var found: VaultCheckReport.DamagedItem?
        for name in downloaded where found == nil {
            let path = first.folder + "/" + name
            let original = try Data(contentsOf: URL(fileURLWithPath: path))
            var damaged = original
            damaged[damaged.count / 2] ^= 0x5a
            try damaged.write(to: URL(fileURLWithPath: path))
            // A page of the second device that the first's root still used would stop the open.
            if (try? first.reopen()) != nil {
                found = try first.vault.check().damagedItems.first { $0.path.hasSuffix("from-second.bin") }
            }
            if found == nil {
                try original.write(to: URL(fileURLWithPath: path))
                try? first.reopen()
            }
        }
        let damage = try #require(found, "damage in the other device's chunk is not found")
        #expect(damage.unreadableChunks.count == 1 && damage.problems.count == 1, "\(damage)")
        #expect(try second.vault.check().isClean, "the second device's own storage is untouched")
    }
}
