import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A follow (FORMAT.md §14.8, "Sync after a withdrawal", step 2) whose downloads are staged
/// (§13.11): the owner's first device A wrote and synced several times since its laptop B's last
/// sync, so that A's later roots put new pages and blocks at numbers of A that B's root still
/// reads under their old keys. B's follow stages them; until its record's switch the record
/// opens B's old root, which needs the old bytes at those names. A cut at each mutation of
/// the follow's commit, from its slots' lending on, must leave B's storage opening (to the old
/// root before the switch, the new one after), clean, with its count whole; the next syncs
/// complete (issue 14: "a follow cut between its root and its record's switch can leave the
/// storage unopenable"; before the fix the staged page went to its name before the switch:
/// "index page 0:13 does not open").
@Suite(.serialized) struct FollowStagedCutTests {
    typealias Cuts = OwnerFollowCutTests

    @Test func aFollowCutAnywhereInItsCommitKeepsWhatTheOldRootReads() throws {
        let remote = try TestRemote(.local)
        let shared = try Cuts.Run.sharedOnTwoDevices(remote)
        let (a, b, sharedX, sharedY) = (shared.a, shared.b, shared.sharedX, shared.sharedY)
        let copies = try TestFolder.make("follow-staged-copies")
        defer {
            for device in [a, b, shared.x, shared.y, sharedX, sharedY] { device.finish() }
            TestFolder.remove(copies)
            remote.finish()
        }
        // A writes and syncs on; B does not sync meanwhile. A's freed numbers (its pages and
        // blocks of the root B last read, unpinned once A's next root is up) are written again.
        var all = ["hello.txt": "hello from alice"]
        for round in 0..<4 {
            try a.write("round\(round).txt", "round \(round) from alice")
            all["round\(round).txt"] = "round \(round) from alice"
            try a.sync(remote)
        }
        try a.vault.unshare(with: shared.codeY)
        try a.reopen()
        try a.write("after.txt", "after yvonne")
        all["after.txt"] = "after yvonne"
        try a.sync(remote)
        let served = try #require(remote.servedFolder)
        try SyncDevice.copyFiles(from: b.folder, to: copies + "/b")
        try SyncDevice.copyFiles(from: served, to: copies + "/remote")
        // The whole follow, counted: its switch is its last `replace` (B's record).
        let counting = CutStorageFolder(try Storage.open(at: b.folder), cutAt: nil)
        try b.sync(remote, storage: counting) { _ in }
        #expect(try b.tree() == all, "the whole follow")
        // Its commit: the slots lent (`rename`), the root, what follows it, the switch (a
        // `replace`), the old slots into the lent numbers. A run makes its own random choices (a
        // commit refreshes the covers or not), so its mutations can be one more or fewer than
        // the counted run's: a cut at each of the commit's from the first rename on.
        let lending = try #require(counting.done.firstIndex(of: "rename"), "\(counting.done)")
        #expect(counting.done[lending...].filter { $0 == "replace" }.count >= 2, "a staged download and the switch: \(counting.done)")
        for n in lending..<min(lending + 16, counting.done.count) {
            let cut = Cuts.Cut.mutation(n)
            try b.restore(from: copies + "/b")
            try SyncDevice.copyFiles(from: copies + "/remote", to: served)
            let done = try Cuts.sync(b, remote, cutAt: cut)
            #expect(b.reopenFailure == nil, "\(cut): \(b.reopenFailure.map { "\($0)" } ?? ""), after \(done.suffix(8)) of \(counting.done)")
            guard b.reopenFailure == nil else { continue }
            let report = try b.vault.check()
            #expect(report.isClean, "\(cut): \(report.storageProblems) \(report.damagedItems)")
            #expect(try Shared.files(b.folder).count % Format.groupSize == 0, "\(cut): the count")
            // Before the switch the old root (what B had), after it the new one.
            let tree = try b.tree()
            #expect(tree == ["hello.txt": "hello from alice"] || tree == all, "\(cut): \(tree) after \(done.suffix(8))")
        }
        try b.sync(remote)
        try a.sync(remote)
        try sharedX.sync(remote)
        #expect(try b.tree() == all && a.tree() == all && sharedX.tree() == all, "after the cuts")
        let check = try b.vault.check()
        #expect(check.isClean, "after the next sync: \(check.storageProblems) \(check.damagedItems)")
        #expect(Shared.refusal { try sharedY.sync(remote) } == SharingError.accessEnded.description)
    }

    typealias Shared = SharedSyncTests
}
