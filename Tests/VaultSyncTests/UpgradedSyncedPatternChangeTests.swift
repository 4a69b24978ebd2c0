import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore
@testable import VaultSync

/// The pattern change of a synced vault upgraded from format 1 (FORMAT.md §13.12, "with sync,
/// a vault upgraded from format 1"): the remote and every storage held names the old pattern
/// derives (its slots from LOC, device 0's files from NK). The change moves this storage's; the
/// next sync moves the remote's; the device still at the old pattern is told, and joins again
/// with the new one. Afterwards no name the old pattern derives is on the remote or in a
/// storage that follows (the coercer of ADVERSARIES.md who learnt the old pattern finds
/// nothing: without a record there is no VK, and no name is there to show a vault). The same for
/// `dotsafe sync` and a mount's rounds (`mounted`). Real vaults on disk, a real rclone, remotes
/// the test starts.
@Suite(.serialized) struct UpgradedSyncedPatternChangeTests {
    static let oldSeed: UInt8 = 7, newSeed: UInt8 = 8

    /// Every name the pattern `seed` derives that a vault of it could use: its unlock records and
    /// root slots at both locations, and its NK's file names below `count`.
    static func patternNames(_ seed: UInt8, count: Int = 4096) throws -> Set<String> {
        try patternNames(SyncDevice.secrets(seed), count: count)
    }

    /// The same for the pattern's `secrets` (a typed pattern's, with its keyring's salt).
    static func patternNames(_ secrets: VaultSecrets, count: Int = 4096) throws -> Set<String> {
        var names: Set<String> = []
        for location in [Label.localLocation, Label.remoteLocation] {
            names.insert(try FormatTwoKeys.unlockName(locator: secrets.locator, location: location))
            for slot: UInt8 in 0...1 { names.insert(try FormatTwoKeys.slotName(rootLocator: secrets.locator, slot: slot, location: location)) }
        }
        for number in 0..<UInt64(count) { names.insert(try secrets.fileName(number)) }
        return names
    }

    static func remoteNames(_ remote: TestRemote) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: try #require(remote.servedFolder)))
    }

    @Test(arguments: [false, true])
    func theNextSyncMovesTheRemoteAndTheOldPatternNamesNothing(mounted: Bool) throws {
        let remote = try TestRemote(.webdav)
        defer { remote.finish() }
        let first = try SyncDevice.formatOne("laptop", files: ["notes.txt": "notes v1", "plan.txt": "plan v1"])
        defer { first.finish() }
        try first.write("upgraded.txt", "written by the session that upgrades")
        try #require(first.vault.formatVersion == 2 && first.vault.namesArePatternDerived == (true, true))
        try first.sync(remote)
        let second = try SyncDevice("desktop")
        defer { second.finish() }
        try second.sync(remote)
        try second.write("from-desktop.txt", "desktop")
        try second.sync(remote)
        try first.sync(remote)  // two devices in its table now
        let oldNames = try Self.patternNames(Self.oldSeed)
        #expect(try Self.remoteNames(remote).intersection(oldNames).count >= 16, "the remote holds names of the old pattern")

        try first.changePattern(to: Self.newSeed)
        #expect(first.vault.namesArePatternDerived == (false, false))
        #expect(first.storageNames.intersection(oldNames).isEmpty, "the change moved this storage's names")
        #expect(try Self.remoteNames(remote).intersection(oldNames).count >= 16, "the change itself is local")
        try first.write("after.txt", "written after the change")
        // Meanwhile the other device, at the old pattern, syncs a change to the old names.
        try second.write("meanwhile.txt", "synced by the desktop meanwhile")
        try second.sync(remote)

        let moved = try first.sync(remote, mounted: mounted)
        #expect(try first.read("meanwhile.txt") == "synced by the desktop meanwhile", "merged")
        #expect(moved.filesRemoved >= 16, "\(moved.line)")
        #expect(try first.vault.formerRemoteUnlockName() == nil)
        let remoteAfter = try Self.remoteNames(remote)
        #expect(remoteAfter.intersection(oldNames).isEmpty, "a remote name still comes from the old pattern")
        #expect(remoteAfter.contains(try first.vault.remoteUnlockName()))
        #expect(first.storageNames.intersection(oldNames).isEmpty)

        // The device at the old pattern: one line, its storage and what it had not synced kept.
        try second.write("unsynced.txt", "written on the desktop after the change")
        let before = second.storageNames
        let treeBefore = try second.tree()
        #expect(throws: SyncRefusal.patternChanged) { try second.sync(remote, mounted: mounted) }
        try second.reopen()
        #expect(second.storageNames == before)
        #expect(try second.tree() == treeBefore)

        // It joins again with the new pattern, in an empty storage folder: everything is there.
        let again = try SyncDevice("desktop-again", seed: Self.newSeed)
        defer { again.finish() }
        try again.sync(remote)
        #expect(try again.tree() == first.tree())
        #expect(try again.read("from-desktop.txt") == "desktop" && again.read("after.txt") == "written after the change")
        #expect(try again.read("notes.txt") == "notes v1" && again.read("upgraded.txt") == "written by the session that upgrades")
        #expect(again.storageNames.intersection(oldNames).isEmpty)
        try again.write("from-desktop-again.txt", "again")
        try again.sync(remote)
        try first.sync(remote)
        #expect(try first.read("from-desktop-again.txt") == "again")
        #expect(try Self.remoteNames(remote).intersection(oldNames).isEmpty)

        // The old pattern opens nothing on the remote.
        let stranger = try SyncDevice("old-pattern", seed: Self.oldSeed)
        defer { stranger.finish() }
        #expect(throws: SyncRefusal.noVault) { try stranger.sync(remote) }
    }

    /// Cut before each change of the remote: at that instant one pattern opens the remote to a
    /// whole state (or none is there for it), and the next sync finishes the move.
    @Test(arguments: [false, true])
    func aSyncStoppedAtAnyChangeIsFinishedByTheNext(mounted: Bool) throws {
        let changes = ["upload", "root", "root#2", "record", "remove", "former names", "former record", "forget"]
        let oldNames = try Self.patternNames(Self.oldSeed)
        for stop in changes {
            let remote = try TestRemote(.local)
            defer { remote.finish() }
            let first = try SyncDevice.formatOne("laptop", files: ["notes.txt": "notes v1"])
            defer { first.finish() }
            try first.write("upgraded.txt", "upgraded")
            try first.sync(remote)
            try first.changePattern(to: Self.newSeed)
            try first.write("notes.txt", "notes v2")
            #expect(throws: SyncDevice.Stop.self, "\(stop)") { try first.sync(remote, stoppingAt: stop, mounted: mounted) }
            for (seed, name) in [(Self.oldSeed, "old"), (Self.newSeed, "new")] {
                let device = try SyncDevice("\(name)-\(stop)", seed: seed)
                defer { device.finish() }
                do {
                    try device.sync(remote)
                    #expect(["notes v1", "notes v2"].contains(try device.tree()["notes.txt"]), "\(stop): \(name) pattern")
                } catch SyncRefusal.noVault {
                    // No record of this pattern, or none whose slots are there, at this instant.
                }
            }
            #expect(try first.read("notes.txt") == "notes v2")
            try first.sync(remote, mounted: mounted)
            #expect(try first.vault.formerRemoteUnlockName() == nil, "\(stop)")
            #expect(try Self.remoteNames(remote).intersection(oldNames).isEmpty, "\(stop)")
            #expect(first.storageNames.intersection(oldNames).isEmpty, "\(stop)")
            let fresh = try SyncDevice("fresh-\(stop)", seed: Self.newSeed)
            defer { fresh.finish() }
            try fresh.sync(remote)
            #expect(try fresh.read("notes.txt") == "notes v2" && fresh.read("upgraded.txt") == "upgraded", "\(stop)")
        }
    }
}

extension SyncDevice {
    /// A device whose storage holds a vault of format 1 (an older release's) with these files
    /// at its root, opened again for writing: its first commit upgrades it (FORMAT.md §13.9).
    static func formatOne(_ name: String, seed: UInt8 = SyncDevice.seed, files: [String: String]) throws -> SyncDevice {
        try formatOne(name, seed: seed, contents: files.mapValues { Array($0.utf8) })
    }

    /// The same with each file's bytes.
    static func formatOne(_ name: String, seed: UInt8 = SyncDevice.seed, contents files: [String: [UInt8]]) throws -> SyncDevice {
        let device = try SyncDevice(name, seed: seed)
        try device.vault.lock()  // new: nothing was written
        try writeFormatOne(device.folder, secrets: try secrets(seed), files: files)
        try device.reopen()
        try #require(device.vault.formatVersion == 1)
        return device
    }

    /// A vault of format 1 with these files at its root, made in the storage at `folder`.
    static func writeFormatOne(_ folder: String, secrets: VaultSecrets, files: [String: [UInt8]]) throws {
        var options = Vault.Options(cacheBytes: 8 << 20)
        options.newVaultFormat = .one
        options.upgradesFormatOne = false
        let old = try Vault.open(storage: try Storage.open(at: folder), secrets: secrets, options: options)
        for (path, bytes) in files.sorted(by: { $0.key < $1.key }) {
            let file = try old.create(.file, in: Vault.rootID, named: Array(path.utf8), mode: 0o644)
            try old.write(file, offset: 0, bytes: bytes)
        }
        try old.lock()
    }
}
