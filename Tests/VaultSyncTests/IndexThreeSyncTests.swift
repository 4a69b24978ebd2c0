import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
@testable import VaultSync

/// A sync and index version 3 (docs/FORMAT.md §15.1): a vault of index 3 writes its remote as
/// index 3; a sync that reads a remote root of version 3 writes the local index as version 3 at
/// its commit (the conversion of a vault of several devices), or, on a release that does not
/// read index 3, is refused with nothing written; index 2 on both sides stays index 2.
@Suite(.serialized) struct IndexThreeSyncTests {
    typealias Three = IndexThreeSync

    /// The version of the newest root among the remote's files that opens under `device`'s RK.
    static func remoteRootVersion(_ device: SyncDevice, _ remote: TestRemote) throws -> UInt8? {
        let served = try #require(remote.servedFolder)
        let rootKey = try device.vault.openRemote(unlockFile: nil).rootKey
        var newest: IndexRootV2?
        for name in try FileManager.default.contentsOfDirectory(atPath: served) {
            let file = Array(try #require(FileManager.default.contents(atPath: served + "/" + name)))
            for slot: UInt64 in 0...1 {
                guard let root = try? VaultState.openRoot(file, slot: slot, rootKey: rootKey, readsIndexThree: true) else { continue }
                if root.generation > newest?.generation ?? 0 { newest = root }
            }
        }
        return newest?.envelopeVersion
    }

    static func expectNewer(_ body: () throws -> Void, _ context: String) {
        do {
            try body()
            Issue.record("\(context): not refused")
        } catch {
            #expect("\(error)" == "the vault was made by a newer DotSafe (format version 3); update DotSafe to open it", "\(context)")
        }
    }

    @Test func aVaultOfIndexThreeWritesTheRemoteAsIndexThree() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let a = try SyncDevice("i3-first", indexThree: true)
        defer { a.finish() }
        try a.makeFolder("docs")
        try a.write("docs/plan.txt", "plan v1")
        try a.write("24835", "a name that shares its hash")
        try a.write("39342", "with this one")
        try a.sync(remote)
        #expect(try Self.remoteRootVersion(a, remote) == IndexRootV3.envelopeVersion)
        try Three.expectExact(a, "after the first sync")
        try Three.expectRemoteExact(a, remote, "after the first sync")

        // A device on a release without index 3 cannot join: refused, nothing written.
        let old = try SyncDevice("i3-old")
        defer { old.finish() }
        let storageBefore = try SharedSyncTests.files(old.folder), remoteBefore = try SharedSyncTests.files(served)
        Self.expectNewer({ try old.sync(remote) }, "a join without index 3")
        #expect(try SharedSyncTests.files(old.folder) == storageBefore && SharedSyncTests.files(served) == remoteBefore,
                "nothing written here or there")

        let b = try SyncDevice("i3-second", indexThree: true)
        defer { b.finish() }
        try b.sync(remote)
        #expect(Three.isThree(b) && Three.entryHashKey(b) == Three.entryHashKey(a), "the joined device takes the remote's EHK")
        #expect(try b.tree() == a.tree())
        try Three.expectExact(b, "joined")
    }

    /// Two devices of index 2 (each has a sync base: no automatic conversion); one of them is
    /// converted as `dotsafe upgrade` asks it and merges the other's changes from a remote of
    /// version 2; the other, on a release without index 3, is refused; with it, its sync's
    /// commit writes its index as version 3 with the remote's EHK.
    @Test func aSyncThatReadsARemoteOfIndexThreeWritesTheLocalIndexAsIndexThree() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let (a, b) = try VaultSyncTests.twoDevices(remote)
        defer { a.finish(); b.finish() }
        try b.write("from-b.txt", "b, before the conversion")
        try b.sync(remote)
        a.indexThree = true
        try a.reopen()
        #expect(!Three.isThree(a), "a vault with a sync base converts only when asked (§15.1)")
        a.vault.state.withLock { $0.committer.convertsToIndexThree = true }
        try a.write("notes.txt", "notes v2, converting")
        #expect(Three.isThree(a))
        try Three.expectExact(a, "converted")
        // a's sync merges b's change from a remote of version 2 and writes it as version 3.
        try a.sync(remote)
        #expect(try a.read("from-b.txt") == "b, before the conversion")
        #expect(try Self.remoteRootVersion(a, remote) == IndexRootV3.envelopeVersion)
        try Three.expectExact(a, "merged")
        try Three.expectRemoteExact(a, remote, "a's merge")

        try b.write("docs/from-b-2.txt", "b, after the conversion")
        let storageBefore = try SharedSyncTests.files(b.folder), remoteBefore = try SharedSyncTests.files(served), tree = try b.tree()
        Self.expectNewer({ try b.sync(remote) }, "index 2 against a remote of index 3")
        #expect(try SharedSyncTests.files(b.folder) == storageBefore && SharedSyncTests.files(served) == remoteBefore,
                "nothing written here or there")
        try b.reopen()
        #expect(try b.tree() == tree)

        b.indexThree = true
        try b.reopen()
        try b.sync(remote)
        #expect(Three.isThree(b) && Three.entryHashKey(b) == Three.entryHashKey(a), "b's index is version 3 with the remote's EHK")
        try Three.expectExact(b, "b took index 3")
        try Three.expectRemoteExact(b, remote, "b's merge")
        try a.sync(remote)
        #expect(try a.tree() == b.tree() && a.read("docs/from-b-2.txt") == "b, after the conversion")
        try Three.expectExact(a, "a again")
        // b's storage is index 3 now: a release without it refuses it.
        try b.vault.lock()
        Self.expectNewer({ _ = try SyncDevice.open(b.folder) }, "b's storage without index 3")
        try b.reopen()
    }

    @Test func indexTwoOnBothSidesStaysIndexTwo() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (a, b) = try VaultSyncTests.twoDevices(remote)
        defer { a.finish(); b.finish() }
        for device in [a, b] {
            device.indexThree = true
            try device.reopen()
        }
        try a.write("notes.txt", "notes v2")
        try b.write("docs/plan.txt", "plan v2")
        for device in [a, b, a] { try device.sync(remote) }
        #expect(try a.tree() == b.tree() && a.read("docs/plan.txt") == "plan v2" && b.read("notes.txt") == "notes v2")
        #expect(!Three.isThree(a) && !Three.isThree(b))
        #expect(try Self.remoteRootVersion(a, remote) == StorageFormat.two.envelopeVersion)
        #expect(try a.vault.check().isClean && b.vault.check().isClean)
    }
}
