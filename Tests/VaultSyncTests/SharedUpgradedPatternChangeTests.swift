import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
@testable import VaultSync

/// The pattern change of a shared, synced vault upgraded from format 1 (FORMAT.md §13.12, step
/// 5a and "a grantee's device"): the change seals the grants again to the new root locator, the
/// owner's next sync puts them up after the root and before the new record, and a grantee's
/// device follows at its next sync: it keeps reading the old files and the new ones, writes
/// again, and afterwards holds no name the old pattern derives. The old pattern opens an empty
/// vault in the owner's storage; a grantee withdrawn before the change stays out. For `dotsafe
/// sync` and a mount's rounds (`mounted`). Real vaults on disk, a real rclone, a WebDAV remote.
@Suite(.serialized) struct SharedUpgradedPatternChangeTests {
    typealias Shared = SharedSyncTests
    typealias Upgraded = UpgradedSyncedPatternChangeTests
    static let oldSeed: UInt8 = 7, newSeed: UInt8 = 8

    @Test(arguments: [false, true])
    func theGranteeFollowsTheMoveAndAWithdrawnOneStaysOut(mounted: Bool) throws {
        let remote = try TestRemote(.webdav)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let owner = try SyncDevice.formatOne("alice", seed: Self.oldSeed, files: ["notes.txt": "notes v1"])
        // Its write (hello.txt) upgrades the vault, which is then shared with B and C.
        let (a, b, c, sharedB, sharedC, _, codeB) = try SharedSyncUnshareTests.sharedWithTwo(remote, owner: owner)
        defer { a.finish(); b.finish(); c.finish() }
        try #require(a.vault.formatVersion == 2 && a.vault.namesArePatternDerived == (true, true))
        try sharedC.write("from-carol.txt", "carol before the change")
        try sharedC.sync(remote)
        // B is withdrawn, and the withdrawal synced (a move waits for that); C follows it.
        try a.vault.unshare(with: codeB)
        try a.sync(remote)
        try sharedC.sync(remote)
        let oldNames = try Upgraded.patternNames(Self.oldSeed)
        // Device 0's files there are named from the old pattern's NK (a withdrawal moves RL only).
        #expect(!Set(try Shared.files(c.folder).keys).intersection(oldNames).isEmpty, "C's storage holds names of the old pattern")

        try a.changePattern(to: Self.newSeed)
        #expect(a.vault.namesArePatternDerived == (false, false))
        #expect(a.storageNames.intersection(oldNames).isEmpty)
        try a.write("after.txt", "written after the change")
        _ = try a.sync(remote, mounted: mounted)
        #expect(Set(try Shared.files(served).keys).intersection(oldNames).isEmpty, "a remote name still comes from the old pattern")

        // C follows: the old files and the new, its own; then it writes and A reads that.
        _ = try sharedC.sync(remote, mounted: mounted)
        let expected = ["notes.txt": "notes v1", "hello.txt": "hello from alice", "from-carol.txt": "carol before the change",
                        "after.txt": "written after the change"]
        #expect(try sharedC.tree() == expected)
        try sharedC.reopen()
        #expect(try sharedC.tree() == expected, "the follow is in C's storage")
        #expect(Set(try Shared.files(c.folder).keys).intersection(oldNames).isEmpty, "C's storage still holds names of the old pattern")
        #expect(try Shared.files(c.folder).count % Format.groupSize == 0)
        let report = try sharedC.vault.check()
        #expect(report.storageProblems.isEmpty && report.damagedItems.isEmpty, "\(report.storageProblems)")
        try sharedC.write("carol-after.txt", "carol after the change")
        _ = try sharedC.sync(remote, mounted: mounted)
        _ = try a.sync(remote, mounted: mounted)
        #expect(try a.read("carol-after.txt") == "carol after the change")
        try sharedC.vault.lock()
        #expect(try Shared.files(served).count % Format.groupSize == 0)

        // B, withdrawn: one line, nothing changed in B's storage or on the remote.
        let storageB = try Shared.files(b.folder), remoteNow = try Shared.files(served)
        #expect(Shared.refusal { try sharedB.sync(remote) } == SharingError.accessEnded.description)
        #expect(try Shared.files(b.folder) == storageB && Shared.files(served) == remoteNow)
        try sharedB.vault.lock()

        // The old pattern opens an empty vault in A's storage (and names nothing there).
        try a.vault.lock()
        let old = try SyncDevice.open(a.folder, seed: Self.oldSeed)
        #expect(old.isNew, "the old pattern opens a new, empty vault")
        try old.lock()
        #expect(a.storageNames.intersection(oldNames).isEmpty)
        try a.reopen()
        #expect(try a.tree() == expected.merging(["carol-after.txt": "carol after the change"]) { $1 })
    }
}
