import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A grantee's first sync (its join, docs/FORMAT.md §13.12 "A join keeps whole groups", §14.9)
/// killed at any mutation up to the end of its commit, then the owner withdraws the grant
/// (§14.8) and syncs before the grantee's next sync (ADVERSARIES.md: the crash, the revoked
/// friend). The join's stand-ins then hold the grant the owner replaced by an ended one, so the
/// next sync cannot tell them for its own killed join. What the grantee must see: that access
/// ended (the withdrawn path's one line), at every sync, with nothing changed in the storage or
/// on the remote; the storage whole (16 files a group) with the grantee's own vault writable and
/// clean; nothing written after the withdrawal reachable; and, shared with again, a sync that
/// joins and reads everything. Real vaults on disk, a real rclone, a local remote.
@Suite(.serialized) struct WithdrawnKilledJoinTests {
    typealias Shared = SharedSyncTests

    @Test func aJoinKilledInItsCommitThenWithdrawnIsToldAccessEndedAndJoinsWhenSharedAgain() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let a = try SyncDevice("alice", seed: 0xA1), b = try SyncDevice("bob", seed: 0xB2)
        defer { a.finish(); b.finish() }
        let codeB = try b.vault.contactCode().code
        try b.write("mine.txt", "bob's own")
        try b.vault.lock()
        try a.write("hello.txt", "hello from alice")
        try a.write("big.txt", String(repeating: "s", count: 70_000))
        let codeA = try a.vault.contactCode().code
        try a.vault.share(with: codeB)
        try a.reopen()
        try a.sync(remote)
        let sharedTree = try a.tree()

        let sharedB = try SyncDevice("bob", sharedWith: b, by: codeA)
        let beforeJoin = try sharedB.snapshot(), sharedRemote = try Self.copy(remote, "shared")
        // B's join, counted: its commit is local, before its first change of the remote.
        var local: Int?
        let counting = try StorageCount.countedSync(sharedB, remote) { _, mutations in local = local ?? mutations }
        let commitEnd = try #require(local)
        #expect(try sharedB.tree() == sharedTree)

        // A withdraws B and writes on, from the remote as B's join found it.
        try SyncDevice.copyFiles(from: sharedRemote, to: remote.path)
        try a.vault.unshare(with: codeB)
        try a.reopen()
        try a.write("later.txt", "after bob")
        try a.sync(remote)
        let withdrawnRemote = try Self.copy(remote, "withdrawn"), withdrawnA = try a.snapshot()
        var all = sharedTree
        all["later.txt"] = "after bob"

        var failures: [String] = [], sharedAgain: [String] = [], committedAgain: [String] = [], joined = 0
        for cut in 0..<commitEnd {
            let place = "cut before mutation \(cut) (\(counting.done[cut]))"
            try sharedB.restore(from: beforeJoin)
            try SyncDevice.copyFiles(from: sharedRemote, to: remote.path)
            let storage = CutStorageFolder(try Storage.open(at: sharedB.folder), cutAt: cut)
            do { try sharedB.sync(remote, storage: storage, seeing: true) { _ in } } catch {}
            if !sharedB.seenAfterCut.isEmpty { failures.append("\(place), read-only: \(sharedB.seenAfterCut)") }

            // B's next syncs, after the withdrawal: the one line, nothing changed.
            try SyncDevice.copyFiles(from: withdrawnRemote, to: remote.path)
            for attempt in 1...2 {
                let storageB = try Shared.files(b.folder), remoteNow = try Shared.files(served)
                let line = Shared.refusal { try sharedB.sync(remote) }
                if line != SharingError.accessEnded.description { failures.append("\(place), sync \(attempt): \(line)") }
                if try Shared.files(b.folder) != storageB || Shared.files(served) != remoteNow {
                    failures.append("\(place), sync \(attempt) changed the storage or the remote")
                }
                sharedB.reopenAfterCrash()
            }
            let committed = !sharedB.vault.isNew
            if committed { joined += 1 }
            failures += try Self.granteeStorageWhole(sharedB, own: b, place, canRead: sharedTree)
            sharedB.reopenAfterCrash()

            // Shared with again: B's next sync joins the vault as it is now.
            try a.restore(from: withdrawnA)
            try a.vault.share(with: codeB)
            try a.reopen()
            try a.sync(remote)
            // The killed join's files are not the remote's any more (the grants were sealed
            // again): refused, and Bob, whose storage holds no other state of the vault, says so.
            // A join committed before the cut follows the new keys with no option (§13.12, "A
            // join committed, never published").
            var again: [String] = []
            do {
                do { try sharedB.sync(remote) } catch SyncRefusal.heldUnderOtherPattern where !committed {
                    sharedB.reopenAfterCrash()
                    sharedB.replacesPartialJoin = true
                    defer { sharedB.replacesPartialJoin = false }
                    try sharedB.sync(remote)
                }
                if try sharedB.tree() != all { again.append("\(place): reads \(try sharedB.tree().keys.sorted())") }
                let files = try StorageCount.files(b.folder), report = try sharedB.vault.check()
                if files % Format.groupSize != 0 { again.append("\(place): \(files) files") }
                if !report.isClean { again.append("\(place): \(report.damagedItems) \(report.storageProblems)") }
            } catch {
                again.append("\(place): \(error)")
            }
            if committed { committedAgain += again } else { sharedAgain += again }
        }
        #expect(joined > 0 && joined < commitEnd, "cuts after the join's commit: \(joined) of \(commitEnd)")
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        // A join killed before its commit, whose remote moved on since (here the withdrawal's and
        // the new share's commits), is refused as a state under another pattern; Bob's
        // `--replace-partial-join` joins (FORMAT.md §13.12, "Replacing a partial join").
        #expect(sharedAgain.isEmpty, "\(sharedAgain.joined(separator: "; "))")
        // One killed after its commit, never published: the new keys' root does not list its
        // device, which the sync takes in (its base holds nothing of its own), and it follows.
        // Refused, a grantee would have no way out: the storage holds Bob's own vault.
        #expect(committedAgain.isEmpty, "\(committedAgain.joined(separator: "; "))")
        for copy in [sharedRemote, withdrawnRemote] { try? FileManager.default.removeItem(atPath: copy) }
    }

    /// After the grantee's syncs (`shared` opened again from the disk): 16 files a group; B's
    /// pattern reaches nothing of the shared vault, or (a join that committed before the cut)
    /// what B could read before the withdrawal; B's own vault opens writable, reads and takes a
    /// write, and checks clean.
    static func granteeStorageWhole(_ shared: SyncDevice, own: SyncDevice, _ place: String,
                                    canRead: [String: String]) throws -> [String] {
        var failures: [String] = []
        let files = try StorageCount.files(own.folder)
        if files % Format.groupSize != 0 { failures.append("\(place): \(files) files") }
        if let failure = shared.reopenFailure { failures.append("\(place): B's pattern: \(failure)") }
        let reached = try shared.tree()
        if !reached.isEmpty && reached != canRead { failures.append("\(place): B's pattern reaches \(reached.keys.sorted())") }
        try own.reopen()
        if try own.read("mine.txt") != "bob's own" { failures.append("\(place): B's own file") }
        try own.write("mine-after.txt", "written after")
        try own.reopen()
        let report = try own.vault.check()
        if !report.isClean { failures.append("\(place), B's own vault: \(report.damagedItems) \(report.storageProblems)") }
        try own.vault.lock()
        return failures
    }

    /// The remote's files as they are now, in a folder beside it.
    static func copy(_ remote: TestRemote, _ label: String) throws -> String {
        let copy = remote.path + "-" + label
        try SyncDevice.copyFiles(from: remote.path, to: copy)
        return copy
    }
}
