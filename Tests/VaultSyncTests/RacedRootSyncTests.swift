import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
@testable import VaultSync

/// rclone has no compare-and-swap (docs/SYNC-DESIGN.md §3.4 step 7): two devices that read
/// generation g both publish g + 1, and the slower one's root lands after the other read its own
/// back. Played without timing: the remote is copied at g; the laptop publishes; the desktop
/// syncs with the copy; then the desktop's root and files go over the real remote, as its slow
/// writes would. The laptop's base is its own root, from which the desktop's does not come: its
/// next sync merges without a base and says so (it was refused for good as a remote put back);
/// nothing either side wrote is lost, and both devices and a new one end with one tree, clean
/// checks and whole groups. Files the laptop deleted come back, and what it changed that the
/// desktop holds otherwise stays beside it as a conflict copy: what the warning says.
@Suite(.serialized) struct RacedRootSyncTests {
    static let chunk = KeptOverDeleteSyncTests.chunk

    /// A folder's files by name.
    static func contents(_ folder: String) throws -> [String: Data] { try RemoteRollbackTests.contents(folder) }

    /// What the desktop's writes to its copy of the remote (`from`, taken from `before`) do
    /// when they land on the real remote `served` instead: its new and rewritten files (its
    /// root slots among them) go over what is there, the files it removed go.
    static func land(_ from: [String: Data], before: [String: Data], on served: String) throws {
        for (name, data) in from where before[name] != data {
            FileManager.default.createFile(atPath: served + "/" + name, contents: data)
        }
        for name in before.keys where from[name] == nil { try? FileManager.default.removeItem(atPath: served + "/" + name) }
    }

    /// The laptop syncs (then does `laptopAfter`); the desktop, which read the same generation,
    /// makes `desktopChanges` and syncs with a copy of the remote as both read it; then the
    /// desktop's writes land over the laptop's root. `cut`: the laptop's sync dies after its
    /// root went up, before the root's copy, and its next sync, with nothing changed here,
    /// finds that root there and confirms it (`confirmLandedSyncBase`); the desktop's root
    /// lands only after that.
    static func race(_ remote: TestRemote, laptop: SyncDevice, desktop: SyncDevice, mounted: Bool, cut: Bool = false,
                     laptopAfter: () throws -> Void = {}, desktopChanges: () throws -> Void) throws {
        let served = try #require(remote.servedFolder)
        let atRead = try Self.contents(served), readCopy = remote.folder + "/at-read", laptops = remote.folder + "/laptops"
        try SyncDevice.copyFiles(from: served, to: readCopy)
        if cut {
            #expect(throws: SyncDevice.Stop.self) { try laptop.sync(remote, stoppingAt: "root#2", mounted: mounted) }
            let confirm = try laptop.sync(remote, mounted: mounted)
            #expect(confirm.filesUp == 0 && confirm.filesDown == 0 && confirm.warnings.isEmpty, "the landed root confirmed: \(confirm)")
        } else {
            try laptop.sync(remote, mounted: mounted)
        }
        try laptopAfter()
        try SyncDevice.copyFiles(from: served, to: laptops)
        try desktopChanges()
        try SyncDevice.copyFiles(from: readCopy, to: served)
        try desktop.sync(remote)
        let desktops = try Self.contents(served)
        try SyncDevice.copyFiles(from: laptops, to: served)
        try Self.land(desktops, before: atRead, on: served)
    }

    static func expectWhole(_ devices: [SyncDevice], _ remote: TestRemote, _ comment: String) throws {
        for device in devices {
            #expect(try StorageCount.files(device.folder) % Format.groupSize == 0, "\(comment) \(device.name)")
            let report = try device.vault.check()
            #expect(report.isClean, "\(comment) \(device.name): \(report.damagedItems) \(report.storageProblems)")
        }
        #expect(try StorageCount.files(try #require(remote.servedFolder)) % Format.groupSize == 0, "\(comment) the remote")
    }

    /// Whether `path` is a conflict copy's name of `original` (same folder, `STEM.conflict-…EXT`).
    static func isConflictCopy(_ path: String, of original: String) -> Bool {
        let folder = original.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let name = String(original.dropFirst(folder.isEmpty ? 0 : folder.count + 1))
        let dot = name.lastIndex(of: ".").map { name.distance(from: name.startIndex, to: $0) } ?? name.count
        let stem = String(name.prefix(dot)), suffix = String(name.dropFirst(dot))
        let prefix = (folder.isEmpty ? "" : folder + "/") + stem + ".conflict-"
        return path.hasPrefix(prefix) && path.hasSuffix(suffix) && !path.dropFirst(prefix.count).contains("/")
    }

    /// Nothing of `sides` is lost in `merged` (each file at its path, or at a conflict copy's
    /// name of it, with its bytes), and `merged` holds nothing else.
    static func expectKeepsBoth(_ merged: [String: String], _ sides: [[String: String]], _ comment: String,
                                sourceLocation: SourceLocation = #_sourceLocation) {
        for side in sides {
            for (path, text) in side where merged[path] != text {
                #expect(merged.contains { isConflictCopy($0.key, of: path) && $0.value == text }, "\(comment): \(path) lost: \(merged)",
                        sourceLocation: sourceLocation)
            }
        }
        for (path, text) in merged {
            #expect(sides.contains { side in side[path] == text || side.contains { isConflictCopy(path, of: $0.key) && $0.value == text } },
                    "\(comment): \(path) comes from neither side", sourceLocation: sourceLocation)
        }
    }

    /// New files, an edit, a delete and a rename on each side; the laptop's syncs are a mount's
    /// rounds when `mounted`.
    @Test(arguments: [false, true])
    func aRootARacingDeviceWroteOverMergesWithoutABaseOnBothDevices(mounted: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (laptop, desktop) = try VaultSyncTests.twoDevices(remote)
        defer { laptop.finish(); desktop.finish() }
        try laptop.write("shared.txt", "shared v1")
        try laptop.write("gone-here.txt", "the laptop deletes this")
        try laptop.write("gone-there.txt", "the desktop deletes this")
        try laptop.write("old-name.txt", "renamed by the desktop")
        try laptop.sync(remote)
        try desktop.sync(remote)

        try laptop.write("from-laptop.txt", "made on the laptop")
        try laptop.write("notes.txt", "notes v2 from the laptop")
        try laptop.vault.remove(Array("gone-here.txt".utf8), from: Vault.rootID)
        try laptop.vault.commit()
        try laptop.rename("docs/plan.txt", to: "plan-renamed.txt")
        try Self.race(remote, laptop: laptop, desktop: desktop, mounted: mounted) {
            try desktop.write("from-desktop.txt", "made on the desktop")
            try desktop.write("shared.txt", "shared v2 from the desktop")
            try desktop.vault.remove(Array("gone-there.txt".utf8), from: Vault.rootID)
            try desktop.vault.commit()
            try desktop.rename("old-name.txt", to: "new-name.txt")
        }
        let sides = [try laptop.tree(), try desktop.tree()]

        let merge = try laptop.sync(remote, mounted: mounted)
        #expect(merge.warnings == [RemoteRollback.replacedRootWarning], "\(merge)")
        #expect(merge.conflicts > 0, "the laptop's notes and the desktop's shared file, each changed on one side: \(merge.actions)")
        let merged = try laptop.tree()
        Self.expectKeepsBoth(merged, sides, "the laptop's merge")
        #expect(merged["gone-here.txt"] == "the laptop deletes this", "deleted on the laptop, back from the desktop's root")
        #expect(merged["gone-there.txt"] == "the desktop deletes this", "deleted on the desktop, kept from the laptop's")
        #expect(merged["from-laptop.txt"] == "made on the laptop" && merged["from-desktop.txt"] == "made on the desktop")
        let desktopMerge = try desktop.sync(remote)
        #expect(desktopMerge.conflicts == 0 && desktopMerge.warnings.isEmpty, "its own root's tree: \(desktopMerge)")
        #expect(try desktop.tree() == merged, "the desktop after the laptop's merge")
        let again = try laptop.sync(remote, mounted: mounted)
        #expect(again.warnings.isEmpty && again.filesDown == 0, "\(again)")
        #expect(try laptop.tree() == merged, "the laptop again")
        try Self.expectWhole([laptop, desktop], remote, "after the syncs:")
        let third = try SyncDevice("third")
        defer { third.finish() }
        try third.sync(remote)
        #expect(try third.tree() == merged, "a device new to the vault")
        try Self.expectWhole([third], remote, "a device new to the vault:")
    }

    /// The laptop deleted x.bin, whose three chunks lie in its files, and wrote y.bin over its
    /// free files once its root was read back; the desktop, racing, edited x's middle chunk. The
    /// merge without a base keeps x with two chunks in the laptop's files: they must still hold
    /// x's bytes, on every device (pinned while a racing root may reference them: the root the
    /// laptop read does; without that pin y.bin went into them). `cut`: the laptop's sync is cut
    /// after its root went up and the next one confirms that root before the racing root lands
    /// (without the pins kept by that confirmation, y.bin went into them too).
    @Test(arguments: [(false, false), (true, false), (false, true), (true, true)])
    func anEditOverADeleteInARacingRootKeepsTheDeletersFiles(mounted: Bool, cut: Bool) throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (laptop, desktop, x, xFiles) = try KeptOverDeleteSyncTests.bothHoldX(remote, seed: 0x31, mounted: false)
        defer { laptop.finish(); desktop.finish() }

        try laptop.vault.remove(Array("x.bin".utf8), from: Vault.rootID)
        try laptop.vault.commit()
        var kept = x
        var y: [UInt8] = []
        try Self.race(remote, laptop: laptop, desktop: desktop, mounted: mounted, cut: cut, laptopAfter: {
            y = try KeptOverDeleteSyncTests.writeOverFreeFiles(laptop, seed: 0x65, reaching: Set(xFiles.values))
        }, desktopChanges: {
            let middle = KeptOverDeleteSyncTests.bytes(0x78, chunks: 1)
            try desktop.write("x.bin", bytes: middle, at: UInt64(Self.chunk))
            kept.replaceSubrange(Self.chunk..<2 * Self.chunk, with: middle)
        })
        let keptFiles = try KeptOverDeleteSyncTests.chunkFiles(desktop, "x.bin").filter { xFiles[$0.key] == $0.value }
        #expect(keptFiles.count == 2, "the desktop's x still points at two files of the laptop")

        let names: Set<String> = ["docs/", "docs/plan.txt", "notes.txt", "x.bin", "y.bin"]
        let expectIntact = { (device: SyncDevice, comment: String) in
            try KeptOverDeleteSyncTests.expectIntact(device, names, x: (path: "x.bin", bytes: kept, mode: 0o644), y: y, comment)
        }
        let merge = try laptop.sync(remote, mounted: mounted)
        #expect(merge.warnings == [RemoteRollback.replacedRootWarning], "\(merge)")
        try expectIntact(laptop, "after the laptop's merge:")
        try desktop.sync(remote)
        try expectIntact(desktop, "after the desktop's next sync:")
        try laptop.sync(remote, mounted: mounted)
        try expectIntact(laptop, "after the laptop's next sync:")
        try Self.expectWhole([laptop, desktop], remote, "after the syncs:")
        let third = try SyncDevice("third")
        defer { third.finish() }
        try third.sync(remote)
        try expectIntact(third, "a device new to the vault:")
    }
}
