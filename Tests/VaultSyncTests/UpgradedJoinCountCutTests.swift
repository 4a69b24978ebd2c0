import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A join of a vault upgraded from format 1 whose pattern never changed (docs/FORMAT.md §13.9,
/// §13.12 "A join keeps whole groups") keeps the storage's count of files in steps of 16 at
/// every instant too (§3; ADVERSARIES.md: the copier, the crash). There device 0 names its files
/// from the pattern's NK and the local slots are format 1's names, so the pattern's own open
/// (a writing mount, the next sync's) sees a killed join as a format-1 vault's leftovers: the
/// join once wrote its slots and record one file at a time. Each cut is followed by a read-only
/// check, a writing open and the next sync: every byte comes, clean, in steps of 16, and no
/// stand-in stays. Real vaults on disk, a real rclone, a local remote.
@Suite(.serialized) struct UpgradedJoinCountCutTests {
    /// Device 0's numbers 0 and 1 at their names from the pattern's NK (an upgraded vault's
    /// device 0 names from NK): the slots' stand-ins of a join.
    static func slotStandIns(seed: UInt8 = SyncDevice.seed) throws -> [String] {
        let secrets = try SyncDevice.secrets(seed)
        return try (0..<UInt64(Format.indexSlotCount)).map { try secrets.standInName($0) }
    }

    @Test func anUpgradedVaultsJoinKeepsWholeGroupsAtEveryMutationAndResumesFromACutAtAny() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let first = try SyncDevice.formatOne("laptop", files: ["notes.txt": "notes v1", "plan.txt": "plan v1"])
        defer { first.finish() }
        try first.write("big.txt", String(repeating: "b", count: 300_000))
        for index in 0..<20 { try first.write("note-\(index).txt", "note \(index)") }
        try #require(first.vault.formatVersion == 2 && first.vault.namesArePatternDerived == (true, true))
        try first.sync(remote)
        try Self.joinCountedAndCut(first, remote)
        #expect(try first.read("big.txt") == String(repeating: "b", count: 300_000))
    }

    /// After a withdrawal (§14.8) RL is random but device 0 still names from NK: the same, with
    /// grants (role 2 and 4), which a writing open after a join killed before its commit point
    /// cannot name without the record: the join holds them until its commit point (without that,
    /// that open removed device 0's files around them, the count off by the grants).
    /// The join is `dotsafe sync`'s, or a mount's first round (`mount --sync` on an empty
    /// storage) and its second: a round fetches before it merges, so the grants, which no
    /// committed root listed yet, come in the second round, over their numbers' stand-ins
    /// (the join's first round left them out, in whole groups); both rounds are cut.
    @Test(arguments: [false, true])
    func anUpgradedVaultsJoinAfterAWithdrawalKeepsWholeGroupsWithItsGrants(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let owner = try SyncDevice.formatOne("alice", files: ["notes.txt": "notes v1"])
        let (a, b, c, sharedB, sharedC, _, codeB) = try SharedSyncUnshareTests.sharedWithTwo(remote, owner: owner)
        defer { a.finish(); b.finish(); c.finish() }
        try a.vault.unshare(with: codeB)
        try a.sync(remote)
        try #require(a.vault.namesArePatternDerived == (false, true))
        try sharedB.vault.lock()
        try sharedC.vault.lock()
        let grants = try StorageCount.grants(a).keys.map { ($0, try #require(FileManager.default.contents(atPath: a.folder + "/" + $0))) }
        try #require(grants.count == 2, "B's ended grant and C's")
        try Self.joinCountedAndCut(a, remote, mountRounds: mounted ? 2 : 0) { device, place in
            for (name, bytes) in grants {
                #expect(FileManager.default.contents(atPath: device.folder + "/" + name) == bytes, "\(place): grant \(name)")
            }
        }
    }

    /// `first`'s vault on `remote` joined by a new device of the same pattern, counted, then cut
    /// at each of that join's mutations from the same empty storage. `synced` checks more of a
    /// device where a join ended: the counted one, and each cut's after its next sync.
    /// `mountRounds`: the join is a mount's round(s) (`SyncDevice.mountRounds`), not `dotsafe sync`.
    static func joinCountedAndCut(_ first: SyncDevice, _ remote: TestRemote, mountRounds: Int = 0,
                                  synced: @escaping (SyncDevice, _ place: String) throws -> Void = { _, _ in }) throws {
        let expected = try first.tree()
        let standIns = try Self.slotStandIns()

        let counter = try SyncDevice("desktop-count")
        defer { counter.finish() }
        let counting = try mountRounds > 0 ? StorageCount.countedMountRounds(counter, remote, mountRounds)
            : StorageCount.countedSync(counter, remote)
        #expect(try counter.tree() == expected)
        #expect(StorageCount.uneven(counting).isEmpty, "files before mutation: \(StorageCount.uneven(counting)) of \(counting.done)")
        #expect(try StorageCount.files(counter.folder) % Format.groupSize == 0)
        #expect(counter.storageNames.intersection(standIns).isEmpty, "a stand-in stayed")
        #expect(try counter.vault.check().isClean)
        try synced(counter, "counted")

        // Whole groups after the cut and after the writing open that follows, read-only clean
        // before it, and the next sync brings the remote's vault with no stand-in left.
        let second = try SyncDevice("desktop")
        defer { second.finish() }
        var run = try CutSyncRun(second, remote, before: try second.tree(), expected: expected)
        run.mountRounds = mountRounds
        defer { run.remove() }
        let patternNames = try UpgradedSyncedPatternChangeTests.patternNames(SyncDevice.seed).union(standIns)
        var joinedAtCut = 0
        let failures = try StorageCount.cutEach(&run, 0..<counting.mutations) { (place: String) throws in
            if place.hasSuffix("then a sync") {
                #expect(second.storageNames.intersection(standIns).isEmpty, "\(place): a stand-in stayed")
                try synced(second, place)
            } else if second.vault.isNew {
                // Killed before its commit point: the writing open took what the join brought of
                // device 0 (named from the pattern) for a new vault's leftovers, all of it.
                #expect(second.storageNames.intersection(patternNames).isEmpty, "\(place): a name of the pattern stayed")
            } else {
                joinedAtCut += 1
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        #expect(joinedAtCut > 0, "no cut came after the join's commit point")
        try run.finish(with: first)
    }
}
