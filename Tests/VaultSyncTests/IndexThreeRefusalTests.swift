import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
@testable import VaultSync

/// docs/FORMAT.md §15.1: a root of index version 3 (envelope version 3, extension tag 5), in the
/// storage or on the remote, is refused by this release as made by a newer DotSafe, and nothing
/// is written on either side. No release writes version 3 yet: the test seals it itself.
@Suite(.serialized) struct IndexThreeRefusalTests {
    /// Seals every root slot of `folder` (the files that open as a root under `rootKey`) again
    /// as a root of version 3: the same body with an entry hash key. Returns how many.
    static func makeRootsVersionThree(in folder: String, rootKey: SecretBytes) throws -> Int {
        var count = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            let file = Array(try #require(FileManager.default.contents(atPath: folder + "/" + name)))
            for slot: UInt64 in 0...1 {
                guard let body = try? Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexRoot, version: Format.versionTwo,
                                                          key: .secret(rootKey), seal: .indexRootV2(slot: slot)) else { continue }
                var root = try IndexRootV2.decode(body[...])
                root.extensions.append(.init(tag: IndexRootV3.entryHashKeyTag, value: try SystemRandom().bytes(Format.keySize)))
                root.extensions.sort { $0.tag < $1.tag }
                let three = try IndexRootV3(root)
                let (_, sealed) = try Sealer.sealEnvelope(kind: .indexRoot, version: IndexRootV3.envelopeVersion, body: three.encode()[...],
                                                          key: .secret(rootKey), seal: .indexRootV2(slot: slot), random: SystemRandom())
                try Data(sealed).write(to: URL(fileURLWithPath: folder + "/" + name))
                count += 1
            }
        }
        return count
    }

    static func expectNewer(_ error: (any Error)?) {
        guard case .newerFormat(3)? = error as? VaultError else { Issue.record("not refused as newer: \(String(describing: error))"); return }
        #expect("\(error!)" == "the vault was made by a newer DotSafe (format version 3); update DotSafe to open it")
    }

    @Test func aStorageOfIndexThreeIsRefusedAsNewerAndKeptAsItIs() throws {
        let device = try SyncDevice("index3-local")
        defer { device.finish() }
        try device.write("notes.txt", "notes v1")
        let rootKey = try SecretBytes(copying: device.vault.openRemote(unlockFile: nil).rootKey.copyBytes())
        try device.vault.lock()
        #expect(try Self.makeRootsVersionThree(in: device.folder, rootKey: rootKey) == 2)
        let before = try RemoteRollbackTests.contents(device.folder)
        Self.expectNewer(#expect(throws: (any Error).self) { try SyncDevice.open(device.folder) })
        #expect(try RemoteRollbackTests.contents(device.folder) == before, "nothing changed in the storage")
    }

    @Test func aRemoteOfIndexThreeIsRefusedAsNewerAndNothingChanges() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try second.write("mine.txt", "not yet synced")
        let served = try #require(remote.servedFolder)
        let rootKey = try SecretBytes(copying: first.vault.openRemote(unlockFile: nil).rootKey.copyBytes())
        #expect(try Self.makeRootsVersionThree(in: served, rootKey: rootKey) == 2)
        let remoteBefore = try RemoteRollbackTests.contents(served), localBefore = try RemoteRollbackTests.contents(second.folder)
        let tree = try second.tree()
        Self.expectNewer(#expect(throws: (any Error).self) { try second.sync(remote) })
        #expect(try RemoteRollbackTests.contents(served) == remoteBefore, "nothing changed on the remote")
        #expect(try RemoteRollbackTests.contents(second.folder) == localBefore, "nothing changed in the storage")
        try second.reopen()
        #expect(try second.tree() == tree && second.read("mine.txt") == "not yet synced")
    }
}
