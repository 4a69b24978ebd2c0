import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore
@testable import VaultSync

/// docs/FORMAT.md §15.1's policy with sync: a vault that synced (its root records a sync base)
/// and one whose root lists two devices stay index 2 through a writing session with index 3
/// on, their roots of version 2 byte for byte, since another device may run a release
/// without index 3; this release without index 3 still opens them and syncs.
@Suite(.serialized) struct IndexConversionSyncPolicyTests {
    /// The device's storage opened with index 3 on (the device's own vault locked first).
    static func openWithIndexThree(_ device: SyncDevice) throws -> Vault {
        try device.vault.lock()
        var options = Vault.Options(cacheBytes: 8 << 20)
        options.indexThree = true
        return try Vault.open(storage: try Storage.open(at: device.folder), secrets: SyncDevice.secrets(SyncDevice.seed), options: options)
    }

    /// The version byte of the root in each slot (2: index 2, 3: index 3), opened with the open
    /// vault's root key from the storage folder's bytes.
    static func rootVersions(_ vault: Vault, folder: String) throws -> [UInt8] {
        try vault.state.withLock { state in
            let rootKey = try #require(state.committer.formatTwo).rootKey
            return try (0..<UInt8(Format.indexSlotCount)).map { slot in
                let name = try FormatTwoKeys.slotName(rootLocator: state.secrets.locator, slot: slot)
                let file = Array(try #require(FileManager.default.contents(atPath: folder + "/" + name), "slot \(slot)"))
                do {
                    let body = try Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexRoot, version: StorageFormat.two.envelopeVersion,
                                                       key: .secret(rootKey), seal: .indexRootV2(slot: UInt64(slot)))
                    body.wipeStorage()
                    return StorageFormat.two.envelopeVersion
                } catch FormatError.newerVersion(let version) {
                    return version
                }
            }
        }
    }

    /// A writing session with index 3 on leaves `device`'s vault index 2, held as `hold` says;
    /// the device's own open (without index 3) reads it afterwards.
    static func expectStaysIndexTwo(_ device: SyncDevice, _ hold: Vault.IndexThreeHold) throws {
        let vault = try openWithIndexThree(device)
        #expect(vault.indexThreeHold == hold)
        let file = try vault.create(.file, in: Vault.rootID, named: Array("late-\(device.name)".utf8), mode: 0o644)
        try vault.write(file, offset: 0, bytes: Array("late".utf8))
        try vault.commit()
        #expect(vault.indexVersion == 2, "\(device.name)")
        #expect(try rootVersions(vault, folder: device.folder) == [2, 2], "\(device.name): a writing session converts nothing")
        try vault.lock()
        try device.reopen()
        #expect(try device.read("late-\(device.name)") == "late")
    }

    @Test func aVaultThatSyncedStaysIndexTwo() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let device = try SyncDevice("index3-synced")
        defer { device.finish() }
        try device.write("notes.txt", "notes v1")
        try device.sync(remote)
        try Self.expectStaysIndexTwo(device, Vault.IndexThreeHold(devices: 1, grants: 0, synced: true))
        try device.sync(remote)
    }

    @Test func aVaultOfTwoDevicesStaysIndexTwoOnBoth() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try first.sync(remote)
        for device in [first, second] { try Self.expectStaysIndexTwo(device, Vault.IndexThreeHold(devices: 2, grants: 0, synced: true)) }
        try second.sync(remote)
        try first.sync(remote)
        try second.sync(remote)
        #expect(try first.tree() == second.tree())
    }
}
