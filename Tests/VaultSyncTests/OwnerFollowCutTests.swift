import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// The owner's second device following a withdrawal made on the first (FORMAT.md §14.8, "Sync
/// after a withdrawal", step 2), cut short at every step: A shares with X and Y, its laptop B
/// joins by sync, A withdraws Y and writes, B writes. One test cuts B's sync as it follows A's
/// moved remote, the other A's sync that moves the remote, with B following after. A cut is
/// made before each change of the remote (`beforeChange`) and before each mutation of the
/// storage the sync writes (`CutStorageFolder`, a process killed there). After each: B's
/// storage checks clean and its vault holds every file it had, the next syncs complete and
/// bring every file everywhere, X still reads what is new and Y's sync says that access ended.
/// Real vaults on disk, a real rclone, a folder remote; each cut starts again from copies.
/// Every cut takes some 10 s: the suite makes a few that a seed chooses (`Sample`), and
/// `tools/owner-follow-cut-trials` makes all of them.
@Suite(.serialized) struct OwnerFollowCutTests {
    typealias Shared = SharedSyncTests
    struct Stop: Error {}

    /// The cuts a test makes: `DOTSAFE_OWNER_FOLLOW_CUTS` of them (default 2; `all`: every one),
    /// chosen by `DOTSAFE_OWNER_FOLLOW_SEED` (default: a new one each run, printed, and named in
    /// every failure, so that a run can be made again).
    struct Sample: CustomStringConvertible {
        let seed: UInt64
        /// Nil: every cut.
        let count: Int?

        static var environment: [String: String] { ProcessInfo.processInfo.environment }
        static let fromEnvironment = Sample(
            seed: environment["DOTSAFE_OWNER_FOLLOW_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...999_999),
            count: environment["DOTSAFE_OWNER_FOLLOW_CUTS"] == "all" ? nil : environment["DOTSAFE_OWNER_FOLLOW_CUTS"].flatMap { Int($0) } ?? 2)

        /// `count` of `cuts`, distinct, in their order; all of them when `count` is nil.
        func choose<Element>(_ cuts: [Element]) -> [Element] {
            guard let count, count < cuts.count else { return cuts }
            var random = SharedSyncPropertyTests.Generator(state: seed), indexes = Array(cuts.indices)
            for index in 0..<count { indexes.swapAt(index, index + random.next(indexes.count - index)) }
            return indexes.prefix(count).sorted().map { cuts[$0] }
        }

        var description: String {
            "DOTSAFE_OWNER_FOLLOW_SEED=\(seed) DOTSAFE_OWNER_FOLLOW_CUTS=\(count.map(String.init) ?? "all")"
        }
    }

    /// The devices of one run and the folder that keeps the copies each cut starts from.
    final class Run {
        let remote: TestRemote
        let a: SyncDevice, b: SyncDevice, x: SyncDevice, y: SyncDevice, sharedX: SyncDevice, sharedY: SyncDevice
        let copies: String
        var devices: [SyncDevice] { [a, b, sharedX, sharedY] }

        /// A's vault with a file, shared with X and Y, synced; its laptop B, X and Y joined by
        /// their first sync. X's and Y's own vaults are locked.
        static func sharedOnTwoDevices(_ remote: TestRemote) throws -> (a: SyncDevice, b: SyncDevice, x: SyncDevice, y: SyncDevice,
                                                                         sharedX: SyncDevice, sharedY: SyncDevice,
                                                                         codeX: ContactCode, codeY: ContactCode) {
            let a = try SyncDevice("alice", seed: 0xA1), x = try SyncDevice("xavier", seed: 0xB2), y = try SyncDevice("yvonne", seed: 0xC3)
            let codeX = try x.vault.contactCode().code, codeY = try y.vault.contactCode().code
            try x.vault.lock()
            try y.vault.lock()
            try a.write("hello.txt", "hello from alice")
            let codeA = try a.vault.contactCode().code
            try a.vault.share(with: codeX)
            try a.vault.share(with: codeY)
            try a.reopen()
            try a.sync(remote)
            let b = try SyncDevice("alice-laptop", seed: 0xA1)
            try b.sync(remote)
            let sharedX = try SyncDevice("xavier", sharedWith: x, by: codeA), sharedY = try SyncDevice("yvonne", sharedWith: y, by: codeA)
            try sharedX.sync(remote)
            try sharedY.sync(remote)
            return (a, b, x, y, sharedX, sharedY, codeX, codeY)
        }

        /// Everything up to the withdrawal; `aSynced`: A's sync that moves the remote is done too.
        init(aSynced: Bool) throws {
            remote = try TestRemote(.local)
            let shared = try Self.sharedOnTwoDevices(remote)
            (a, b, x, y, sharedX, sharedY) = (shared.a, shared.b, shared.x, shared.y, shared.sharedX, shared.sharedY)
            try b.write("laptop.txt", "from the laptop")
            try a.vault.unshare(with: shared.codeY)
            try a.reopen()
            try a.write("after.txt", "after yvonne")
            if aSynced { try a.sync(remote) }
            copies = try TestFolder.make("owner-follow-copies")
            for device in devices { try SyncDevice.copyFiles(from: device.folder, to: copies + "/" + device.name) }
            try SyncDevice.copyFiles(from: try #require(remote.servedFolder), to: copies + "/remote")
        }

        /// Every storage and the remote as they were when the run was made.
        func restore() throws {
            for device in devices { try device.restore(from: copies + "/" + device.name) }
            try SyncDevice.copyFiles(from: copies + "/remote", to: remote.servedFolder!)
        }

        func finish() {
            for device in devices + [x, y] { device.finish() }
            TestFolder.remove(copies)
            remote.finish()
        }
    }

    /// Where a sync is cut: before the n-th mutation of its storage, or at the n-th time it
    /// reaches a change of the remote.
    enum Cut: CustomStringConvertible {
        case mutation(Int)
        case change(String, occurrence: Int)

        var description: String {
            switch self {
            case .mutation(let n): "before storage mutation \(n)"
            case .change(let name, let n): "at change '\(name)' #\(n)"
            }
        }
    }

    /// `device`'s sync, whole, counting what it does: its storage's mutations and the changes
    /// of the remote it reaches, in order; then every cut of it that one of these gives.
    /// `follows`: the sync follows a withdrawal, and its storage's file count is a multiple of 16
    /// before each mutation and after the sync (FORMAT.md §14.8, "The file count of a follow").
    static func cuts(of device: SyncDevice, _ remote: TestRemote, follows: Bool = false) throws -> [Cut] {
        let counting = CutStorageFolder(try Storage.open(at: device.folder), cutAt: nil, countsFiles: follows)
        var changes: [String] = []
        try device.sync(remote, storage: counting) { changes.append($0) }
        if follows { try checkCounts(counting, device) }
        var cuts = (0..<counting.mutations).map(Cut.mutation)
        var seen: [String: Int] = [:]
        for change in changes {
            seen[change, default: 0] += 1
            cuts.append(.change(change, occurrence: seen[change]!))
        }
        return cuts
    }

    /// R-BLK-5 at every step of a whole follow: the file count before each mutation of its
    /// storage (there are some, and the rename of a slot among them), and after it. Not before a
    /// `createGroup`: the sync's downloads bring another device's files one by one, and that
    /// mutation makes their groups whole (FORMAT.md §13.11), before the follow writes anything.
    static func checkCounts(_ counting: CutStorageFolder, _ device: SyncDevice) throws {
        let counts = counting.countsBefore, done = counting.done
        #expect(counts.count == done.count && done.contains("rename"), "\(device.name): \(done)")
        let off = counts.indices.filter { counts[$0] % Format.groupSize != 0 && done[$0] != "createGroup" }.map { "before mutation \($0) (\(done[$0])): \(counts[$0])" }
        #expect(off.isEmpty, "\(device.name): the count is not a multiple of \(Format.groupSize) \(off.prefix(6)) of \(done)")
        #expect(try Shared.files(device.folder).count % Format.groupSize == 0, "\(device.name): after the follow")
    }

    /// `device`'s sync stopped at `cut`: it must not complete. Returns the kinds of the
    /// mutations of its storage done before a mutation cut.
    @discardableResult
    static func sync(_ device: SyncDevice, _ remote: TestRemote, cutAt cut: Cut) throws -> [String] {
        var storage: CutStorageFolder?
        var seen: [String: Int] = [:]
        if case .mutation(let n) = cut { storage = CutStorageFolder(try Storage.open(at: device.folder), cutAt: n) }
        do {
            try device.sync(remote, storage: storage) { change in
                seen[change, default: 0] += 1
                if case .change(let name, let n) = cut, name == change, seen[change] == n { throw Stop() }
            }
            // A run makes its own random choices (new files, groups to fill), and so may make
            // fewer mutations than the run that counted them: a cut past its end is none.
            if case .mutation(let n) = cut, let storage, storage.mutations <= n { return storage.done }
            Issue.record("\(cut): the sync was not cut")
        } catch {}
        return storage?.done ?? []
    }

    /// Whether `device`'s storage opens after a cut. Known issue (FORMAT.md §14.8, step 2,
    /// "Open"): a follow cut after its commit wrote the root at the new slot names, before the
    /// record's switch, can leave the old root's sync base piece or a page overwritten (seen:
    /// "the sync base's piece 1:7 does not open" with the old record, "index page 1:6" with the
    /// new; the refill of what the commit freed, or a file it wrote, is not kept for the old root).
    static func opens(_ device: SyncDevice, _ cut: Cut, done: [String]) -> Bool {
        guard let error = device.reopenFailure else { return true }
        withKnownIssue("a follow cut between its root and its record's switch can leave the storage unopenable (issue 14)",
                       isIntermittent: true) {
            Issue.record("\(cut): \(error), after \(done.suffix(6)) (again: \(Sample.fromEnvironment))")
        }
        return false
    }

    static let before = ["hello.txt": "hello from alice", "laptop.txt": "from the laptop"]
    static let all = before.merging(["after.txt": "after yvonne"]) { a, _ in a }

    /// B, just after the cut: its storage checks clean and holds what B had, perhaps with what
    /// its merge took in already.
    /// `done`: the kinds of the storage mutations the cut sync made.
    static func checkCutDevice(_ b: SyncDevice, _ cut: Cut, done: [String] = []) throws {
        let report = try b.vault.check()
        let count = report.storageProblems.filter { $0.hasSuffix("not a multiple of \(Format.groupSize)") }
        #expect(report.damagedItems.isEmpty && report.storageProblems.count == count.count,
                "\(cut): \(report.storageProblems) \(report.damagedItems)")
        // The follow keeps the count at every step (FORMAT.md §14.8, "The file count of a follow").
        #expect(count.isEmpty, "\(cut): \(count), after \(done.suffix(4))")
        #expect(try Shared.files(b.folder).count % Format.groupSize == 0, "\(cut): the count, after \(done.suffix(4))")
        let tree = try b.tree()
        #expect(tree == before || tree == all, "\(cut): \(tree)")
    }

    /// The syncs that follow a cut complete and bring every file everywhere; X reads what B and
    /// A wrote after the withdrawal (laptop.txt, after.txt), Y's sync says that access ended,
    /// changes nothing, and Y's storage never got any of it.
    static func checkAfterCut(_ run: Run, _ cut: Cut) throws {
        let (a, b, sharedX, sharedY, remote) = (run.a, run.b, run.sharedX, run.sharedY, run.remote)
        // B's next sync completes; A's publishes what B lacked (A's cut sync: B synced at the
        // old keys meanwhile); B's after it has everything.
        try b.sync(remote)
        try a.sync(remote)
        try b.sync(remote)
        try sharedX.sync(remote)
        #expect(try a.tree() == all, "\(cut): A")
        #expect(try b.tree() == all, "\(cut): B")
        #expect(try sharedX.tree() == all, "\(cut): X reads what is new")
        for device in [a, b] {
            let report = try device.vault.check()
            #expect(report.isClean, "\(cut), \(device.name): \(report.storageProblems) \(report.damagedItems)")
            #expect(try Shared.files(device.folder).count % Format.groupSize == 0, "\(cut), \(device.name)")
        }
        let served = try #require(remote.servedFolder)
        #expect(try Shared.files(served).count % Format.groupSize == 0, "\(cut)")
        let storageY = try Shared.files(sharedY.folder), remoteNow = try Shared.files(served)
        #expect(Shared.refusal { try sharedY.sync(remote) } == SharingError.accessEnded.description, "\(cut)")
        #expect(try Shared.files(sharedY.folder) == storageY && Shared.files(served) == remoteNow, "\(cut): Y's sync changed nothing")
        #expect(try sharedY.tree() == ["hello.txt": "hello from alice"], "\(cut): Y never read what came after")
    }

    /// A cut whose checks throw is recorded with its place, and the next cut still runs.
    static func recording(_ cut: Cut, _ checks: () throws -> Void) {
        do { try checks() } catch { Issue.record("\(cut): \(error) (again: \(Sample.fromEnvironment))") }
    }

    /// The cuts `sample` chooses among `cuts`, printed with how to make them again.
    static func chosen(_ cuts: [Cut], _ test: String) -> [Cut] {
        let sample = Sample.fromEnvironment, chosen = sample.choose(cuts)
        print("OwnerFollowCutTests.\(test): \(chosen.count) of \(cuts.count) cuts (\(sample)): \(chosen)")
        return chosen
    }

    /// B follows A's moved remote, its sync cut at each step.
    @Test func theLaptopFollowsTheWithdrawalWhateverTheCut() throws {
        let run = try Run(aSynced: true)
        defer { run.finish() }
        let cuts = try Self.cuts(of: run.b, run.remote, follows: true)
        #expect(try run.b.tree() == Self.all, "the whole sync follows")
        #expect(cuts.count > 10, "\(cuts)")
        for cut in Self.chosen(cuts, "follow cut") {
            try run.restore()
            let done = try Self.sync(run.b, run.remote, cutAt: cut)
            guard Self.opens(run.b, cut, done: done) else { continue }
            Self.recording(cut) {
                try Self.checkCutDevice(run.b, cut, done: done)
                try Self.checkAfterCut(run, cut)
            }
        }
    }

    /// A follow cut just before its switch (the last `replace`: B's record, or grantee X's grant),
    /// where the commit has put the new root in both slots at RL' and done its bookkeeping and the
    /// record or grant still opens the old root at RL, whose files must all be intact (none
    /// refilled: FORMAT.md §14.8); and just after it, before the old slots' removal (the open
    /// removes them). The device's storage checks clean, then every sync completes.
    @Test(arguments: ["laptop", "grantee"])
    func aFollowCutBeforeItsSwitchOpensTheOldRoot(follower: String) throws {
        let run = try Run(aSynced: true)
        defer { run.finish() }
        let device = follower == "laptop" ? run.b : run.sharedX
        let counting = CutStorageFolder(try Storage.open(at: device.folder), cutAt: nil, countsFiles: true)
        try device.sync(run.remote, storage: counting) { _ in }
        try Self.checkCounts(counting, device)
        let switchAt = try #require(counting.done.lastIndex(of: "replace"), "\(counting.done)")
        for cut in [Cut.mutation(switchAt), .mutation(switchAt + 1)] {
            try run.restore()
            let done = try Self.sync(device, run.remote, cutAt: cut)
            #expect(device.reopenFailure == nil, "\(cut): \(device.reopenFailure.map { "\($0)" } ?? ""), after \(done.suffix(6))")
            guard device.reopenFailure == nil else { continue }
            Self.recording(cut) {
                if device === run.b {
                    try Self.checkCutDevice(run.b, cut, done: done)
                } else {
                    let report = try device.vault.check()
                    #expect(report.isClean, "\(cut): \(report.storageProblems) \(report.damagedItems)")
                    #expect(try Shared.files(device.folder).count % Format.groupSize == 0, "\(cut): the count")
                    let tree = try device.tree(), hello = ["hello.txt": "hello from alice"]
                    #expect(tree == hello || tree == hello.merging(["after.txt": "after yvonne"]) { a, _ in a }, "\(cut): \(tree)")
                }
                try Self.checkAfterCut(run, cut)
            }
        }
    }

    /// The owner's first device (A, device 0) following a withdrawal made on its laptop (B,
    /// device 1), cut just before its switch (its record's `replace`): the new root is at RL''s
    /// names, in free files of A lent to them, and A's record still opens the old root (FORMAT.md
    /// §14.8, "The file count of a follow"). A opens again: the count is a multiple of 16, a
    /// read-only check is clean, and A holds what it wrote before the sync; the next syncs
    /// complete and bring every file everywhere.
    @Test func theFirstDeviceFollowsTheLaptopsWithdrawalCutBeforeItsSwitch() throws {
        let remote = try TestRemote(.local)
        let shared = try Run.sharedOnTwoDevices(remote)
        let (a, b, sharedX, sharedY) = (shared.a, shared.b, shared.sharedX, shared.sharedY)
        let copies = try TestFolder.make("first-device-follow-copies")
        defer {
            for device in [a, b, shared.x, shared.y, sharedX, sharedY] { device.finish() }
            TestFolder.remove(copies)
            remote.finish()
        }
        try a.write("desktop.txt", "from the desktop")
        // A starts the follow with room: a group of free files its committed root owns (the
        // sync's staged downloads take some first). With fewer than two left, a slot takes a file
        // of a group the follow's commit makes, and a cut before the switch leaves the count over
        // (FORMAT.md §14.8, not coded otherwise).
        try a.write("room.bin", "")
        try a.write("room.bin", bytes: [UInt8](repeating: 0x5A, count: Format.groupSize * Format.payloadSize))
        try a.vault.remove(Array("room.bin".utf8), from: Vault.rootID)
        try a.vault.commit()
        try a.reopen()
        #expect(try a.vault.state.withLock { $0.writer.allocator.freeCount } >= Format.groupSize / 2)
        try b.vault.unshare(with: shared.codeY)
        try b.reopen()
        try b.write("after.txt", "after yvonne")
        try b.sync(remote)
        let served = try #require(remote.servedFolder)
        try SyncDevice.copyFiles(from: a.folder, to: copies + "/a")
        try SyncDevice.copyFiles(from: served, to: copies + "/remote")
        // The whole follow, counted: the switch is its last `replace`.
        let counting = CutStorageFolder(try Storage.open(at: a.folder), cutAt: nil, countsFiles: true)
        try a.sync(remote, storage: counting) { _ in }
        try Self.checkCounts(counting, a)
        let switchAt = try #require(counting.done.lastIndex(of: "replace"), "\(counting.done)")
        try a.restore(from: copies + "/a")
        try SyncDevice.copyFiles(from: copies + "/remote", to: served)
        let cut = Cut.mutation(switchAt)
        let done = try Self.sync(a, remote, cutAt: cut)
        #expect(a.reopenFailure == nil, "\(cut): \(a.reopenFailure.map { "\($0)" } ?? ""), after \(done.suffix(6))")
        try Self.checkFirstDeviceAfterSwitchCut(a, b, sharedX, sharedY, remote, "\(cut), after \(done.suffix(4))")
    }

    /// Device 0 (A) after its follow of the laptop's (B's) withdrawal was cut just before its
    /// switch (`cut` says where): the count is whole, a read-only check is clean, A holds what
    /// it wrote (B's later file only if its sync got that far), the next syncs bring every file
    /// everywhere, and Y, whose grant B withdrew, is told that access ended.
    static func checkFirstDeviceAfterSwitchCut(_ a: SyncDevice, _ b: SyncDevice, _ sharedX: SyncDevice, _ sharedY: SyncDevice,
                                               _ remote: TestRemote, _ cut: String) throws {
        #expect(try Shared.files(a.folder).count % Format.groupSize == 0, "\(cut): the count")
        let readOnly = try Vault.open(storage: try Storage.open(at: a.folder), secrets: SyncDevice.secrets(0xA1),
                                      options: Vault.Options(readOnly: true, cacheBytes: 8 << 20))
        let report = try readOnly.check()
        try readOnly.lock()
        #expect(report.isClean, "\(cut): \(report.storageProblems) \(report.damagedItems)")
        let mine = ["hello.txt": "hello from alice", "desktop.txt": "from the desktop"]
        let all = mine.merging(["after.txt": "after yvonne"]) { a, _ in a }
        let tree = try a.tree()
        #expect(tree == mine || tree == all, "\(cut): \(tree)")
        // The next syncs follow and complete.
        try a.sync(remote)
        try b.sync(remote)
        try sharedX.sync(remote)
        #expect(try a.tree() == all && b.tree() == all && sharedX.tree() == all, "\(cut)")
        for device in [a, b] {
            let check = try device.vault.check()
            #expect(check.isClean, "\(cut), \(device.name): \(check.storageProblems) \(check.damagedItems)")
            #expect(try Shared.files(device.folder).count % Format.groupSize == 0, "\(cut), \(device.name)")
        }
        #expect(Shared.refusal { try sharedY.sync(remote) } == SharingError.accessEnded.description, "\(cut)")
    }

    /// A's sync that moves the remote, cut at each step; B syncs right after the cut (it
    /// merges at the old keys or follows, as far as A's sync went).
    @Test func theLaptopFollowsAWithdrawalSyncCutAnywhere() throws {
        let run = try Run(aSynced: false)
        defer { run.finish() }
        let cuts = try Self.cuts(of: run.a, run.remote)
        #expect(cuts.count > 10, "\(cuts)")
        for cut in Self.chosen(cuts, "moving sync cut") {
            try run.restore()
            try Self.sync(run.a, run.remote, cutAt: cut)
            Self.recording(cut) {
                try run.b.sync(run.remote)
                try Self.checkCutDevice(run.b, cut)
                try Self.checkAfterCut(run, cut)
            }
        }
    }
}
