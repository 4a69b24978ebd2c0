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
        let a = try SyncDevice.formatOne("alice", seed: Self.oldSeed, files: ["notes.txt": "notes v1"])
        let b = try SyncDevice("bob", seed: 0xB2), c = try SyncDevice("carol", seed: 0xC3)
        defer { a.finish(); b.finish(); c.finish() }
        let codeB = try b.vault.contactCode().code, codeC = try c.vault.contactCode().code
        try b.reopen()
        try c.reopen()
        try a.write("upgraded.txt", "written by the session that upgrades")
        try #require(a.vault.formatVersion == 2 && a.vault.namesArePatternDerived == (true, true))
        let codeA = try a.vault.contactCode().code
        try a.vault.share(with: codeB)
        try a.vault.share(with: codeC)
        try a.reopen()
        try a.sync(remote)
        let sharedB = try SyncDevice("bob", sharedWith: b, by: codeA), sharedC = try SyncDevice("carol", sharedWith: c, by: codeA)
        try sharedB.sync(remote)
        try sharedC.sync(remote)
        try sharedB.write("from-bob.txt", "bob before the change")
        try sharedB.sync(remote)
        // C is withdrawn, and the withdrawal synced (a move waits for that); B follows it.
        try a.vault.unshare(with: codeC)
        try a.sync(remote)
        try sharedB.sync(remote)
        let oldNames = try Upgraded.patternNames(Self.oldSeed)
        // Device 0's files there are named from the old pattern's NK (a withdrawal moves RL only).
        #expect(!Set(try Shared.files(b.folder).keys).intersection(oldNames).isEmpty, "B's storage holds names of the old pattern")

        try a.changePattern(to: Self.newSeed)
        #expect(a.vault.namesArePatternDerived == (false, false))
        #expect(a.storageNames.intersection(oldNames).isEmpty)
        try a.write("after.txt", "written after the change")
        _ = try a.sync(remote, mounted: mounted)
        #expect(Set(try Shared.files(served).keys).intersection(oldNames).isEmpty, "a remote name still comes from the old pattern")

        // B follows: the old files and the new, its own; then it writes and A reads that.
        _ = try sharedB.sync(remote, mounted: mounted)
        let expected = ["notes.txt": "notes v1", "upgraded.txt": "written by the session that upgrades",
                        "from-bob.txt": "bob before the change", "after.txt": "written after the change"]
        #expect(try sharedB.tree() == expected)
        try sharedB.reopen()
        #expect(try sharedB.tree() == expected, "the follow is in B's storage")
        #expect(Set(try Shared.files(b.folder).keys).intersection(oldNames).isEmpty, "B's storage still holds names of the old pattern")
        #expect(try Shared.files(b.folder).count % Format.groupSize == 0)
        let report = try sharedB.vault.check()
        #expect(report.storageProblems.isEmpty && report.damagedItems.isEmpty, "\(report.storageProblems)")
        try sharedB.write("bob-after.txt", "bob after the change")
        _ = try sharedB.sync(remote, mounted: mounted)
        _ = try a.sync(remote, mounted: mounted)
        #expect(try a.read("bob-after.txt") == "bob after the change")
        try sharedB.vault.lock()
        #expect(try Shared.files(served).count % Format.groupSize == 0)

        // C, withdrawn: one line, nothing changed in C's storage or on the remote.
        let storageC = try Shared.files(c.folder), remoteNow = try Shared.files(served)
        #expect(Shared.refusal { try sharedC.sync(remote) } == SharingError.accessEnded.description)
        #expect(try Shared.files(c.folder) == storageC && Shared.files(served) == remoteNow)
        try sharedC.vault.lock()

        // The old pattern opens an empty vault in A's storage (and names nothing there).
        try a.vault.lock()
        let old = try SyncDevice.open(a.folder, seed: Self.oldSeed)
        #expect(old.isNew, "the old pattern opens a new, empty vault")
        try old.lock()
        #expect(a.storageNames.intersection(oldNames).isEmpty)
        try a.reopen()
        #expect(try a.tree() == expected.merging(["bob-after.txt": "bob after the change"]) { $1 })
    }
}
