import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A join (a device's first sync into a vault, FORMAT.md §13.11–§13.12) killed in the middle of
/// its downloads or late in its commit, then the owner removes a file, syncs, adds another and
/// syncs: numbers the killed join placed are freed and taken again, other bytes at the same
/// names on the remote (ADVERSARIES.md: the crash). The join cannot tell what it placed from a
/// state of this vault under another pattern: refused, every time, in the line that names
/// `--replace-partial-join`, nothing changed. With it (the user says no other state is here)
/// the join replaces those files by the remote's, keeps whole groups at every mutation, and
/// reads every byte, clean (§13.12, "Replacing a partial join"). A join killed after its local
/// commit, before its root went up, needs no option: its next sync takes its device in and
/// merges (§13.12, "A join committed, never published"). (a) the owner's own new
/// device; (b) a grantee (`sync --shared`), whose storage holds their own vault, so that an
/// empty folder is no way out. Real vaults on disk, a real rclone, a local remote.
@Suite(.serialized) struct KilledJoinRemoteChangedTests {
    typealias Files = SharedSyncTests

    @Test func anOwnersDeviceKilledJoinAfterTheOwnerWritesResumesOnlyWithTheOption() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let owner = try SyncedPatternChangeTests.syncedLaptop(remote)
        let joiner = try SyncDevice("desktop")
        defer { owner.finish(); joiner.finish() }
        let failures = try Self.killWriteAndJoin(joiner, owner: owner, remote) { owner in
            try Self.freeAndTakeAgain(owner, remote, removing: ["file-1.txt", "notes/note-3.txt"],
                                      writing: ["file-6.txt": String(repeating: "6", count: 300_000), "notes/note-40.txt": "note 40"])
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
    }

    /// The same after a withdrawal too (`unshare`, §14.8: new VK and RL): a join killed in its
    /// commit left slots that the remote's RL no longer names; the option's join takes them back
    /// by the RL of the record in its stand-in.
    @Test func anOwnersDeviceKilledJoinAfterAWithdrawalResumesOnlyWithTheOption() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let shared = try GrantJoinCountCutTests.Shared(remote)
        defer { shared.finish() }
        try shared.bob.reopen()
        let codeB = try shared.bob.vault.contactCode().code
        try shared.bob.vault.lock()
        let joiner = try SyncDevice("alice-desktop", seed: 0xA1)
        defer { joiner.finish() }
        let failures = try Self.killWriteAndJoin(joiner, owner: shared.alice, remote) { alice in
            try alice.vault.unshare(with: codeB)
            try alice.reopen()
            try Self.freeAndTakeAgain(alice, remote, removing: ["big.txt"], writing: ["big-2.txt": String(repeating: "t", count: 70_000)])
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
    }

    @Test func aGranteesKilledJoinAfterTheOwnerWritesResumesOnlyWithTheOption() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let shared = try GrantJoinCountCutTests.Shared(remote)
        defer { shared.finish() }
        let sharedB = try SyncDevice("bob", sharedWith: shared.bob, by: shared.codeA)
        // Bob's own vault, in the same storage, opens writable and checks clean.
        let failures = try Self.killWriteAndJoin(sharedB, owner: shared.alice, remote, check: { place, _ in
            try shared.bob.reopen()
            try shared.bob.write("mine.txt", place)
            try shared.bob.reopen()
            let report = try shared.bob.vault.check(), reads = try shared.bob.read("mine.txt") == place
            try shared.bob.vault.lock()
            return report.isClean && reads ? [] : ["\(place): Bob's own vault \(report.damagedItems)"]
        }) { alice in
            try Self.freeAndTakeAgain(alice, remote, removing: ["big.txt"],
                                      writing: ["big-2.txt": String(repeating: "t", count: 70_000), "hello.txt": "hello again"])
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        try sharedB.vault.lock()
    }

    /// The option where the user is wrong, after a withdrawal (the slots differ, §14.8): what the
    /// warning says. The join goes on, and the new pattern reads the remote's vault, every item
    /// whole; the old pattern's state lost the files the join replaced (here files it does not read).
    @Test func withTheOptionAStateUnderAnotherPatternAfterAWithdrawalIsReplaced() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try SyncedPatternChangeTests.withdrawnThenChanged(remote)
        defer { first.finish(); second.finish() }
        let before = try Files.files(second.folder)
        let oldTree = try second.tree()

        try second.usePattern(8)
        let line = Files.refusal { try second.sync(remote) }
        #expect(line.contains("--replace-partial-join") && line.contains("destroys another pattern's state"), "\(line)")
        second.reopenAfterCrash()
        #expect(try Files.files(second.folder) == before)
        second.replacesPartialJoin = true
        let joined = try StorageCount.countedSync(second, remote)
        #expect(try second.tree() == first.tree())
        let report = try second.vault.check(), files = try StorageCount.files(second.folder)
        #expect(report.damagedItems.isEmpty)
        // The old state's slots and record, at names only its pattern derives, stay beside the
        // files the join added to make its groups whole: covers made with those groups keep
        // the count whole at every mutation (FORMAT.md §13.12, "A join's covers").
        #expect(report.isClean, "\(report.storageProblems)")
        #expect(files % Format.groupSize == 0 && StorageCount.uneven(joined).isEmpty, "\(files): \(StorageCount.uneven(joined))")
        let after = try Files.files(second.folder)
        let replaced = before.keys.filter { after[$0] != nil && after[$0] != before[$0] }
        #expect(!replaced.isEmpty, "the join replaced files of the old pattern's state")
        // The old pattern still opens its state. Here the replaced files (and the free one at
        // the name of the record's stand-in, which the join's commit renamed) are files its tree
        // does not read: it reads as before, and with the covers its check is clean.
        try second.usePattern(SyncDevice.seed)
        #expect(try second.tree() == oldTree)
        let oldReport = try second.vault.check()
        #expect(oldReport.isClean, "\(oldReport.damagedItems) \(oldReport.storageProblems)")
    }

    static func order(_ a: Data, _ b: Data) -> Bool { a.lexicographicallyPrecedes(b) }

    /// `owner` removes the files at `removed` and syncs (their numbers are free from then on),
    /// then writes `written` and syncs: new bytes at numbers taken again.
    static func freeAndTakeAgain(_ owner: SyncDevice, _ remote: TestRemote, removing removed: [String],
                                 writing written: [String: String]) throws {
        for path in removed {
            let parts = path.split(separator: "/").map(String.init)
            try owner.vault.remove(Array(parts.last!.utf8), from: try owner.id(parts.dropLast().joined(separator: "/")))
        }
        try owner.reopen()
        try owner.sync(remote)
        // The root that sync read still pins the removed files until the next sync's commit (a
        // racing root may come from it, SYNC-DESIGN §3.4 step 7): a change synced frees them.
        try owner.makeFolder("after-removal")
        try owner.sync(remote)
        for (path, text) in written.sorted(by: { $0.key < $1.key }) { try owner.write(path, text) }
        try owner.reopen()
        try owner.sync(remote)
    }

    /// `joiner`'s join, cut in the middle of its placements and before the last mutation of its
    /// commit, each from the same start, and after that commit (before its upload); after each
    /// cut `owner` writes (`ownerWrites`, which syncs), then the join runs without the option,
    /// then with it; after the commit, one sync without it merges. `check` looks at the
    /// joiner's storage after that (told the tree it must read). Returns what went wrong.
    static func killWriteAndJoin(_ joiner: SyncDevice, owner: SyncDevice, _ remote: TestRemote,
                                 check: (_ place: String, _ tree: [String: String]) throws -> [String] = { _, _ in [] },
                                 ownerWrites: (SyncDevice) throws -> Void) throws -> [String] {
        let served = try #require(remote.servedFolder)
        let joinerStart = try joiner.snapshot(), ownerStart = try owner.snapshot()
        let remoteStart = try WithdrawnKilledJoinTests.copy(remote, "start")
        defer { try? FileManager.default.removeItem(atPath: remoteStart) }
        var local: Int?
        let counting = try StorageCount.countedSync(joiner, remote) { _, mutations in local = local ?? mutations }
        let commitEnd = try #require(local)
        let placements = counting.done.indices.filter { counting.done[$0] == "placeDownloads" }
        try #require(placements.count > 1, "\(counting.done)")
        // Between the join's placements (its pages, then its chunk files), after the last, and
        // in its commit before its last rename (the record's: until then its pattern opens nothing).
        let commitPoint = try #require(counting.done[..<commitEnd].lastIndex(of: "rename"))
        let cuts = [placements[1], placements.last! + 1, commitPoint, commitEnd - 1]

        var failures: [String] = []
        for cut in cuts {
            let committed = cut == commitEnd - 1
            let place = "cut before mutation \(cut) (\(counting.done[cut]), after \(counting.done[cut - 1]))"
            try owner.restore(from: ownerStart)
            try SyncDevice.copyFiles(from: remoteStart, to: remote.path)
            try joiner.restore(from: joinerStart)
            let storage = CutStorageFolder(try Storage.open(at: joiner.folder), cutAt: cut)
            do { try joiner.sync(remote, storage: storage, seeing: true) { _ in } } catch {}
            if !joiner.seenAfterCut.isEmpty { failures.append("\(place), read-only: \(joiner.seenAfterCut)") }
            if joiner.vault.isNew == committed { failures.append("\(place): committed \(!joiner.vault.isNew)") }
            let left = try Files.files(joiner.folder), remoteThen = try Files.files(served)

            try ownerWrites(owner)
            let remoteNow = try Files.files(served), tree = try owner.tree()
            // The test's own precondition: a name the killed join placed (the remote's bytes
            // then) holds other bytes on the remote now.
            let rewritten = left.keys.filter { left[$0] == remoteThen[$0] && remoteNow[$0] != nil && remoteNow[$0] != left[$0] }
            if rewritten.isEmpty { failures.append("\(place): no file the join placed was rewritten on the remote") }

            // Without the option: the one line, naming it; nothing changed on either side. A join
            // committed before the cut is no partial one: its sync merges without it (§13.12).
            for attempt in 1...2 where !committed {
                let line = Files.refusal { try joiner.sync(remote) }
                joiner.reopenAfterCrash()
                if line != SyncRefusal.heldUnderOtherPattern.description || !line.contains("--replace-partial-join") {
                    failures.append("\(place), sync \(attempt): \(line)")
                }
                // (A killed commit's slots go back to their stand-ins first, §13.12: the same bytes.)
                if try Files.files(joiner.folder).values.sorted(by: Self.order) != left.values.sorted(by: Self.order)
                    || Files.files(served) != remoteNow {
                    failures.append("\(place), sync \(attempt) changed the storage or the remote")
                }
            }

            // With it (after the commit, without): whole groups at every mutation, the owner's
            // vault as it is now, clean.
            joiner.replacesPartialJoin = !committed
            defer { joiner.replacesPartialJoin = false }
            let joined: CutStorageFolder
            do { joined = try StorageCount.countedSync(joiner, remote) } catch {
                failures.append("\(place), with the option \(!committed): \(error)")
                continue
            }
            if !StorageCount.uneven(joined).isEmpty { failures.append("\(place): files before mutation \(StorageCount.uneven(joined))") }
            if try joiner.tree() != tree { failures.append("\(place): reads \(try joiner.tree().keys.sorted())") }
            let report = try joiner.vault.check()
            if !report.isClean { failures.append("\(place): \(report.damagedItems) \(report.storageProblems)") }
            let count = try StorageCount.files(joiner.folder)
            if count % Format.groupSize != 0 { failures.append("\(place): \(count) files") }
            failures += try check(place, tree)
            joiner.reopenAfterCrash()

            // Both go on syncing: a write of the joiner reaches the owner.
            try joiner.write("from-joiner.txt", place)
            try joiner.reopen()
            try joiner.sync(remote)
            try owner.sync(remote)
            if try owner.read("from-joiner.txt") != place { failures.append("\(place): the owner does not read the joiner's write") }
        }
        return failures
    }
}
