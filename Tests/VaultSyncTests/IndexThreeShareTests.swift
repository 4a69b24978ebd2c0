import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
@testable import VaultSync

/// Sharing a vault of index 3 (docs/FORMAT.md §14.7–§14.9, §15.7): the grantee's device joins
/// with the vault's EHK (in the root, under RK: every holder of VK reads it), both write and
/// merge, the records stay exact; a withdrawal keeps EHK and seals the root under RK', which
/// the withdrawn holder's keys do not open: its sync is told that access ended and writes nothing.
@Suite(.serialized) struct IndexThreeShareTests {
    typealias Three = IndexThreeSync

    @Test func aSharedVaultOfIndexThreeMergesAndIsWithdrawn() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let a = try SyncDevice("i3-alice", seed: 0xA1, indexThree: true), b = try SyncDevice("i3-bob", seed: 0xB2)
        defer { a.finish(); b.finish() }
        let codeB = try b.vault.contactCode().code
        try b.reopen()
        try a.write("hello.txt", "hello from alice")
        let codeA = try a.vault.contactCode().code
        try a.vault.share(with: codeB)
        try a.reopen()
        #expect(Three.isThree(a))
        try Three.expectExact(a, "shared")
        try a.sync(remote)
        let entryHashKey = Three.entryHashKey(a)
        let formerRootKey = try a.vault.openRemote(unlockFile: nil).rootKey.copyBytes()

        // On a release without index 3 the grantee is refused, and nothing is written.
        let storageBefore = try SharedSyncTests.files(b.folder), remoteBefore = try SharedSyncTests.files(served)
        let old = try SyncDevice("i3-bob", sharedWith: b, by: codeA)
        IndexThreeSyncTests.expectNewer({ try old.sync(remote) }, "a grantee without index 3")
        try old.vault.lock()
        #expect(try SharedSyncTests.files(b.folder) == storageBefore && SharedSyncTests.files(served) == remoteBefore)

        let shared = try SyncDevice("i3-bob", sharedWith: b, by: codeA, indexThree: true)
        try shared.sync(remote)
        #expect(Three.isThree(shared) && Three.entryHashKey(shared) == entryHashKey, "the grantee reads EHK from the root")
        #expect(try shared.tree() == a.tree())
        try Three.expectExact(shared, "joined")

        // Both write, one name on both sides: merged, the conflict's name in the entries.
        try a.write("hello.txt", "alice's change")
        try a.write("from-a.txt", "a")
        try shared.write("hello.txt", "bob's change")
        try shared.makeFolder("bob")
        try shared.write("bob/from-b.txt", "b")
        for device in [shared, a, shared] {
            try device.sync(remote)
            try Three.expectExact(device, "\(device.name) synced")
            try Three.expectRemoteExact(device, remote, "\(device.name) synced")
        }
        let merged = try a.tree()
        #expect(try shared.tree() == merged)
        #expect(merged.count == 5, "both changes of hello.txt kept: \(merged.keys.sorted())")

        try a.vault.unshare(with: codeB)
        #expect(Three.isThree(a) && Three.entryHashKey(a) == entryHashKey, "the withdrawal keeps EHK")
        try Three.expectExact(a, "withdrawn")
        try a.write("after.txt", "not for bob")
        try a.sync(remote)
        try Three.expectExact(a, "withdrawn, synced")
        try Three.expectRemoteExact(a, remote, "withdrawn, synced")
        // No root on the remote opens under the keys bob held: nothing there gives him the
        // new state, nor anything that EHK would help him read.
        let formerKey = try SecretBytes(copying: formerRootKey)
        for name in try FileManager.default.contentsOfDirectory(atPath: served) {
            let file = Array(try #require(FileManager.default.contents(atPath: served + "/" + name)))
            for slot: UInt64 in 0...1 {
                #expect((try? VaultState.openRoot(file, slot: slot, rootKey: formerKey, readsIndexThree: true)) == nil, "\(name)")
            }
        }
        let storageB = try SharedSyncTests.files(b.folder), remoteNow = try SharedSyncTests.files(served)
        #expect(SharedSyncTests.refusal { try shared.sync(remote) } == SharingError.accessEnded.description)
        #expect(try SharedSyncTests.files(b.folder) == storageB && SharedSyncTests.files(served) == remoteNow)
    }
}
