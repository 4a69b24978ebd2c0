import DotSafeTestSupport
import Foundation
import Glibc
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// The join of a vault upgraded from format 1 (device 0 names its files from the pattern's NK,
/// docs/FORMAT.md §13.12 "A join keeps whole groups") as the first round of `mount --sync`
/// (`MountSync.first`: `MountedSynchronizer` on the vault the daemon opened, with its options:
/// index 3 held on demand, chunks written behind), counted and cut at its storage mutations as
/// `UpgradedJoinCountCutTests` cuts `dotsafe sync`'s (in this process, as a kill there leaves
/// the storage: the built `dotsafe` has no such hook): the storage's count of files is a multiple
/// of 16 before each mutation and after each cut (R-BLK-5; ADVERSARIES.md: the copier, the
/// crash). After each cut, as a user goes on: a read-only `dotsafe fsck`; then the built
/// `dotsafe mount --sync` again, or a plain writing `dotsafe mount` (§9.3's open of a join
/// killed before its commit point) followed by `dotsafe sync`: every byte reads through the
/// mount, fsck is clean, no stand-in stays, and the count is in steps of 16 at each step.
/// Real vaults on disk, real mounts, a real rclone, a local remote.
@Suite(.serialized) struct MountJoinCountCutTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    enum Resume: String, CaseIterable, CustomTestStringConvertible {
        /// The next `mount --sync`.
        case mountWithSync
        /// A plain writing mount, locked, then `dotsafe sync`.
        case mountThenSync
        var testDescription: String { rawValue }
    }

    @Test(arguments: Resume.allCases)
    func anUpgradedVaultsJoinByMountSyncKeepsWholeGroupsAtEveryCutAndFinishes(_ resume: Resume) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let h = try MountHarness()
        defer { h.finish() }
        let expected = try Self.upgradedLaptop(h, remote)
        try Self.joinCountedAndCut(h, remote, expected, resume)
    }

    /// After a withdrawal (§14.8) RL is random but device 0 still names from NK: the same, with
    /// the two grants (B's ended one and C's), which the join holds until its commit point: each
    /// is at its name with its bytes once the resume is done. (Resumed by `mount --sync` only:
    /// the writing open of a plain mount is the one above.)
    @Test func anUpgradedVaultsJoinByMountSyncAfterAWithdrawalKeepsItsGrants() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let h = try MountHarness()
        defer { h.finish() }
        let (expected, bytes) = try Self.withdrawnLaptop(h, remote)
        try Self.joinCountedAndCut(h, remote, expected, .mountWithSync) { desktop, place in
            for (name, grant) in bytes {
                #expect(FileManager.default.contents(atPath: desktop + "/" + name) == grant, "\(place): grant \(name)")
            }
        }
    }

    /// The upgraded laptop shared with two vaults, synced, one withdrawn, synced: its files, and
    /// its two grants (name in every storage, bytes).
    static func withdrawnLaptop(_ h: MountHarness, _ remote: TestRemote) throws -> (files: [String: Data], grants: [(String, Data)]) {
        let expected = try Self.upgradedLaptop(h, remote)
        var codes: [String] = []
        for (name, pattern) in [("bob", "d1-c2-c3-c4-b5-a4"), ("carol", "a2-b3-c2-d3-e2-e3")] {
            let storage = h.base + "/" + name
            try #require(h.dotsafe(["init", storage]).status == 0)
            try Self.mounted(h, storage, name, pattern: pattern) { point in
                let contact = h.dotsafe(["contact", point])
                try #require(contact.status == 0, "\(contact)")
                codes.append(contact.output.trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
        try Self.mounted(h, h.storage, "the shares") { point in
            for code in codes { #expect(h.dotsafe(["share", point, "--to", code]).status == 0) }
        }
        try Self.syncLaptop(h, remote)
        try Self.mounted(h, h.storage, "the withdrawal") { point in
            let unshared = h.dotsafe(["unshare", point, "--to", codes[0]])
            #expect(unshared.status == 0, "\(unshared)")
        }
        try Self.syncLaptop(h, remote)
        let laptop = try Vault.open(storage: try Storage.open(at: h.storage), secrets: try Self.secrets(h), options: .likeDotsafe(readOnly: true))
        let derived = laptop.namesArePatternDerived == (false, true), grants = try StorageCount.grants(laptop)
        try laptop.lock()
        try #require(derived, "not a withdrawal's RL with device 0 naming from NK")
        try #require(grants.count == 2, "B's ended grant and C's: \(grants)")
        let bytes = try grants.keys.map { name in (name, try #require(FileManager.default.contents(atPath: h.storage + "/" + name))) }
        return (expected, bytes)
    }

    /// The laptop's vault on `remote` joined by a new device's first `mount --sync` round,
    /// counted, then cut at each of its storage mutations from the same empty storage, each cut
    /// followed by `resume`; `finished` checks more of the desktop's storage where each ends.
    static func joinCountedAndCut(_ h: MountHarness, _ remote: TestRemote, _ expected: [String: Data], _ resume: Resume,
                                  finished: (_ desktop: String, _ place: String) throws -> Void = { _, _ in }) throws {
        let desktop = h.base + "/desktop-storage"
        try #require(h.dotsafe(["init", desktop]).status == 0)
        let secrets = try Self.secrets(h)
        let standIns = try (0..<UInt64(Format.indexSlotCount)).map { try secrets.standInName($0) }
        let patternNames = try UpgradedSyncedPatternChangeTests.patternNames(secrets).union(standIns)
        let empty = h.base + "/desktop-empty", remoteCopy = h.base + "/remote-copy"
        try SyncDevice.copyFiles(from: desktop, to: empty)
        try SyncDevice.copyFiles(from: remote.path, to: remoteCopy)

        let counting = CutStorageFolder(try Storage.open(at: desktop), cutAt: nil, countsFiles: true)
        try Self.firstRound(h, desktop, remote, storage: counting)
        #expect(StorageCount.uneven(counting).isEmpty, "files before mutation: \(StorageCount.uneven(counting)) of \(counting.done)")
        try Self.expectWholeGroups(desktop, "counted")
        let counted = Self.fsck(h, desktop)
        #expect(counted.status == 0, "the counted join: \(counted)")

        // A few dozen mutations (its downloads placed group by group, its commit's writes and
        // renames): each is cut, but for the syncs of a file or the folder, which change no byte
        // a kill leaves (a cut before one leaves what the cut after it does; no power is lost here).
        let cuts = (0..<counting.mutations).filter { !["sync", "syncFolder"].contains(counting.done[$0]) || $0 + 1 == counting.mutations }
        var joinedAtCut = 0
        for cut in cuts {
            try SyncDevice.copyFiles(from: empty, to: desktop)
            try SyncDevice.copyFiles(from: remoteCopy, to: remote.path)
            do { try Self.firstRound(h, desktop, remote, storage: CutStorageFolder(try Storage.open(at: desktop), cutAt: cut)) } catch {}
            let place = "\(resume), cut before mutation \(cut) (\(counting.done[cut]))"
            try Self.expectWholeGroups(desktop, place)
            // Read-only, before any writing open: the join's vault, clean, or (killed before its
            // commit point) none.
            let seen = Self.fsck(h, desktop)
            let joined = seen.status == 0
            if joined { joinedAtCut += 1 } else {
                #expect(seen.status == 1 && seen.error == "dotsafe: no vault opens with this pattern in \(desktop): nothing is at "
                    + "its index names\n", "\(place): \(seen)")
            }
            switch resume {
            case .mountWithSync:
                try Self.mounted(h, desktop, place, options: ["--sync", remote.path, "--device", "desktop"]) { point in
                    try Self.expectAll(expected, at: point, place)
                }
            case .mountThenSync:
                try Self.mounted(h, desktop, place) { point in
                    if joined {
                        try Self.expectAll(expected, at: point, place)
                    } else {
                        #expect(try FileManager.default.contentsOfDirectory(atPath: point).isEmpty, "\(place): a new vault")
                    }
                }
                if !joined {
                    // §9.3's open took what the join brought of device 0 for a new vault's leftovers.
                    let left = Set(try FileManager.default.contentsOfDirectory(atPath: desktop)).intersection(patternNames)
                    #expect(left.isEmpty, "\(place): names of the pattern stayed: \(left)")
                }
                let synced = h.dotsafe(["sync", desktop, remote.path, "--pattern", Self.pattern, "--device", "desktop"])
                #expect(synced.status == 0, "\(place): \(synced)")
                try Self.expectWholeGroups(desktop, place + ", then a sync")
                try Self.mounted(h, desktop, place + ", then a sync") { point in try Self.expectAll(expected, at: point, place) }
            }
            let checked = Self.fsck(h, desktop)
            #expect(checked.status == 0, "\(place), at the end: \(checked)")
            let stayed = Set(try FileManager.default.contentsOfDirectory(atPath: desktop)).intersection(standIns)
            #expect(stayed.isEmpty, "\(place): a stand-in stayed: \(stayed)")
            try finished(desktop, place)
        }
        #expect(joinedAtCut > 0 && joinedAtCut < cuts.count, "\(joinedAtCut) of \(cuts.count) cuts after the commit point")

        // The remote lost nothing: the laptop's next sync has it all.
        try syncLaptop(h, remote)
        try Self.mounted(h, h.storage, "the laptop") { point in try Self.expectAll(expected, at: point, "the laptop") }
    }

    static func syncLaptop(_ h: MountHarness, _ remote: TestRemote) throws {
        let sent = h.dotsafe(["sync", h.storage, remote.path, "--pattern", pattern, "--device", "laptop"])
        try #require(sent.status == 0, "\(sent)")
    }

    /// The harness's pattern with its keyring's salt: the secrets `dotsafe` derives.
    static func secrets(_ h: MountHarness) throws -> VaultSecrets {
        let salt = try #require(try Keyring(option: nil, environment: h.environment).patternSalt())
        return try VaultSecrets(pattern: Pattern(parsing: pattern), salt: salt)
    }

    /// The harness's storage: a vault of format 1 (an older release's) with a file of chunks in
    /// two groups (format 1's sealing, which a join must fetch, `UpgradedJoinFormatOneChunksTests`)
    /// and small ones, upgraded by a `dotsafe mount` that writes one more (index 3 too),
    /// synced to `remote`. Returns its files.
    static func upgradedLaptop(_ h: MountHarness, _ remote: TestRemote) throws -> [String: Data] {
        var files = ["big.bin": Data((0..<17 * 262_144).map { _ in UInt8.random(in: 0...255) })]
        for index in 0..<12 { files["note-\(index).txt"] = Data("note \(index)".utf8) }
        try SyncDevice.writeFormatOne(h.storage, secrets: try secrets(h), files: files.mapValues { Array($0) })
        try mounted(h, h.storage, "the upgrade") { point in
            try Data("upgraded".utf8).write(to: URL(fileURLWithPath: point + "/upgraded.txt"))
        }
        files["upgraded.txt"] = Data("upgraded".utf8)
        let upgraded = try Vault.open(storage: try Storage.open(at: h.storage), secrets: try secrets(h), options: .likeDotsafe(readOnly: true))
        let derived = upgraded.formatVersion == 2 && upgraded.namesArePatternDerived == (true, true)
        try upgraded.lock()
        try #require(derived, "not an upgraded vault whose device 0 names from NK")
        try syncLaptop(h, remote)
        return files
    }

    /// The daemon's first round over `storage` (a `CutStorageFolder` of `desktop`): the vault
    /// opened as `MountDaemon` opens it, then `MountedSynchronizer`. Dropped unlocked afterwards,
    /// as a killed daemon's.
    static func firstRound(_ h: MountHarness, _ desktop: String, _ remote: TestRemote, storage: CutStorageFolder) throws {
        var options = Vault.Options(owner: (getuid(), getgid()), writeBehind: .background(limit: 4))
        options.indexThree = true
        options.loadsOnDemand = true
        options.indexCacheLeaves = 64
        let vault = try Vault.open(storage: storage, secrets: try secrets(h), options: options)
        defer { vault.discard() }
        let round = MountedSynchronizer(vault: vault, remote: try SyncDevice.remoteStorage(remote), storageFolder: desktop, deviceName: "desktop")
        _ = try round.run()
    }

    /// `storage` mounted by the built `dotsafe` (with `options`), `body` run on it, then locked;
    /// the count in steps of 16 while mounted and after.
    static func mounted(_ h: MountHarness, _ storage: String, _ place: String, pattern: String = pattern, options: [String] = [],
                        _ body: (_ point: String) throws -> Void) throws {
        let point = try h.mountPoint("mounted")
        let mount = h.dotsafe(["mount", storage, point, "--pattern-stdin"] + options, input: pattern + "\n")
        h.track(point)
        try #require(mount.status == 0 && MountHarness.waitUntil(mounted: true, point), "\(place): \(mount)")
        #expect(!mount.error.contains("warning"), "\(place): \(mount)")
        try expectWholeGroups(storage, place + ", mounted")
        try body(point)
        let locked = h.lock(point)
        try #require(locked.status == 0, "\(place): \(locked)")
        try expectWholeGroups(storage, place + ", locked")
    }

    /// Every file of `expected`, and nothing else, at the mount point, byte for byte.
    static func expectAll(_ expected: [String: Data], at point: String, _ place: String) throws {
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: point)) == Set(expected.keys), "\(place)")
        for (name, bytes) in expected {
            #expect(FileManager.default.contents(atPath: point + "/" + name) == bytes, "\(place): \(name)")
        }
    }

    static func expectWholeGroups(_ storage: String, _ place: String) throws {
        let files = try StorageCount.files(storage)
        #expect(files % Format.groupSize == 0, "\(place): \(files) files")
    }

    /// `dotsafe fsck` (read-only) of `storage`.
    static func fsck(_ h: MountHarness, _ storage: String) -> CommandResult {
        h.dotsafe(["fsck", storage, "--pattern-stdin"], input: pattern + "\n")
    }
}
