import DotSafeTestSupport
import Foundation
import Testing

/// `dotsafe repattern` of a synced vault, then `mount --sync` (FORMAT.md §13.12, "with sync"):
/// the mount's first round carries the change to the remote as `dotsafe sync` does. The old
/// pattern's record goes from the remote, the new one opens it with every file, a change another
/// device synced under the old pattern meanwhile is merged, and that device, still at the old
/// pattern, is told the pattern changed (by `sync` and by `mount --sync`) with nothing changed.
/// The built binary, real mounts, a folder remote through rclone.
@Suite struct SyncMountPatternChangeTests {
    static let old = "b2-c2-d3-d4-c4-b4-a5"
    static let new = "c3-d2-d3-e4-d4-c5-b4"
    static let changedLine = "the vault's pattern was changed on another device: nothing was changed"

    static func sync(_ h: MountHarness, _ storage: String, _ remote: String, pattern: String, device: String) -> CommandResult {
        h.dotsafe(["sync", storage, remote, "--pattern-stdin", "--device", device], input: pattern + "\n")
    }

    /// Mounts `storage` at `point` (without sync unless `options` says), runs `command`, locks.
    static func inMount(_ h: MountHarness, _ storage: String, _ point: String, pattern: String, options: [String] = [],
                        _ command: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> CommandResult {
        let mounted = h.dotsafe(["mount", storage, point, "--pattern-stdin"] + options, input: pattern + "\n")
        try #require(mounted.status == 0 && MountHarness.waitUntil(mounted: true, point), "\(mounted)", sourceLocation: sourceLocation)
        h.track(point)
        let result = h.sh(command, in: point)
        #expect(h.lock(point).status == 0, sourceLocation: sourceLocation)
        return result
    }

    /// The storage's file names and contents.
    static func snapshot(_ folder: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            files[name] = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))
        }
        return files
    }

    @Test func aMountWithSyncCarriesAPatternChangeToTheRemote() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let remote = h.base + "/remote", desktop = h.base + "/desktop", point = try h.mountPoint("point")
        let withSync = ["--sync", remote, "--device", "laptop"]
        // The laptop makes the vault and syncs; the desktop joins, writes, syncs.
        _ = try Self.inMount(h, h.storage, point, pattern: Self.old, "printf one > a.txt && printf plan > plan.txt && sync")
        try #require(Self.sync(h, h.storage, remote, pattern: Self.old, device: "laptop").status == 0)
        try #require(Self.sync(h, desktop, remote, pattern: Self.old, device: "desktop").status == 0)
        _ = try Self.inMount(h, desktop, point, pattern: Self.old, "printf desktop > from-desktop.txt && sync")
        try #require(Self.sync(h, desktop, remote, pattern: Self.old, device: "desktop").status == 0)

        let changed = h.dotsafe(["repattern", h.storage, "--pattern-stdin"], input: "\(Self.old)\n\(Self.new)\n")
        try #require(changed.status == 0, "\(changed)")
        // Meanwhile the desktop, at the old pattern, changes a file and syncs: the remote is still
        // at the old pattern, so this goes up.
        _ = try Self.inMount(h, desktop, point, pattern: Self.old, "printf 'plan v2' > plan.txt && printf meanwhile > meanwhile.txt && sync")
        let meanwhile = Self.sync(h, desktop, remote, pattern: Self.old, device: "desktop")
        try #require(meanwhile.status == 0, "\(meanwhile)")

        // The laptop mounts with --sync and the new pattern: its first round, before the mount is
        // ready, merges the desktop's change and moves the remote to the new pattern.
        let mounted = h.mount(point, pattern: Self.new, options: withSync)
        try #require(mounted.status == 0, "\(mounted)")
        #expect(!mounted.error.contains("warning"), "\(mounted)")
        let all = "cat a.txt plan.txt from-desktop.txt meanwhile.txt"
        #expect(h.sh(all, in: point).output == "oneplan v2desktopmeanwhile")
        #expect(h.lock(point).status == 0)

        // The old pattern opens nothing on the remote any more; the new one opens every file.
        let stranger = Self.sync(h, h.base + "/old-pattern", remote, pattern: Self.old, device: "stranger")
        #expect(stranger.status == 1 && stranger.error.hasPrefix("dotsafe: no vault opens with this pattern"), "\(stranger)")
        #expect(!FileManager.default.fileExists(atPath: h.base + "/old-pattern"))
        let phone = h.base + "/phone"
        let joined = Self.sync(h, phone, remote, pattern: Self.new, device: "phone")
        try #require(joined.status == 0, "\(joined)")
        #expect(try Self.inMount(h, phone, point, pattern: Self.new, all).output == "oneplan v2desktopmeanwhile")

        // The desktop, still at the old pattern, with a change not synced: `sync` and
        // `mount --sync` say the pattern changed, and its storage stays as it was.
        _ = try Self.inMount(h, desktop, point, pattern: Self.old, "printf unsynced > unsynced.txt && sync")
        let before = try Self.snapshot(desktop)
        let refused = Self.sync(h, desktop, remote, pattern: Self.old, device: "desktop")
        #expect(refused.status == 1 && refused.error.hasPrefix("dotsafe: " + Self.changedLine), "\(refused)")
        #expect(try Self.snapshot(desktop) == before)
        let warned = h.dotsafe(["mount", desktop, point, "--pattern-stdin", "--sync", remote, "--device", "desktop"], input: Self.old + "\n")
        try #require(warned.status == 0 && MountHarness.waitUntil(mounted: true, point), "\(warned)")
        h.track(point)
        #expect(warned.error.hasPrefix("dotsafe: warning: the first sync failed (" + Self.changedLine), "\(warned)")
        // The warning says what to do, not that a later round sends the changes (none can).
        #expect(warned.error.contains("): the vault is mounted as it is here, and no sync of this mount sends its changes; "
                                      + "lock it, then mount it with the new pattern and --sync: this storage follows the change\n"), "\(warned)")
        #expect(!warned.error.contains("sent when a sync succeeds"), "\(warned)")
        #expect(h.sh("cat unsynced.txt meanwhile.txt", in: point).output == "unsyncedmeanwhile")
        #expect(h.lock(point).status == 0)
        let stillWhole = Self.sync(h, phone, remote, pattern: Self.new, device: "phone")
        #expect(stillWhole.status == 0, "the remote is whole after the desktop's refused rounds: \(stillWhole)")

        // With the new pattern, in an empty folder, the desktop gets everything that was synced;
        // its change made after the change was synced stays in its old storage (as with `sync`).
        let again = h.base + "/desktop-again"
        try #require(Self.sync(h, again, remote, pattern: Self.new, device: "desktop").status == 0)
        #expect(try Self.inMount(h, again, point, pattern: Self.new, all + " && ls").output
                == "oneplan v2desktopmeanwhilea.txt\nfrom-desktop.txt\nmeanwhile.txt\nplan.txt\n")

        // The laptop's later rounds go on under the new pattern.
        _ = try Self.inMount(h, h.storage, point, pattern: Self.new, options: withSync, "printf later > later.txt && sync")
        try #require(Self.sync(h, again, remote, pattern: Self.new, device: "desktop").status == 0)
        #expect(try Self.inMount(h, again, point, pattern: Self.new, "cat later.txt").output == "later")
    }

    /// The desktop, told to go on with the new pattern, mounts its own storage with it and
    /// `--sync`: that storage holds the vault under the old pattern, with a change not synced.
    /// The first round, before the mount is ready, follows the change there (FORMAT.md §13.12,
    /// "Another device follows the change"): the mount shows everything, the change not synced
    /// goes up, and afterwards the old pattern opens nothing in that storage.
    @Test func aMountWithTheNewPatternOnTheOldPatternsStorageFollowsTheChange() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let remote = h.base + "/remote", desktop = h.base + "/desktop", point = try h.mountPoint("point")
        _ = try Self.inMount(h, h.storage, point, pattern: Self.old, "printf one > a.txt && sync")
        try #require(Self.sync(h, h.storage, remote, pattern: Self.old, device: "laptop").status == 0)
        try #require(Self.sync(h, desktop, remote, pattern: Self.old, device: "desktop").status == 0)
        _ = try Self.inMount(h, desktop, point, pattern: Self.old, "printf offline > offline.txt && sync")
        try #require(h.dotsafe(["repattern", h.storage, "--pattern-stdin"], input: "\(Self.old)\n\(Self.new)\n").status == 0)
        _ = try Self.inMount(h, h.storage, point, pattern: Self.new, "printf after > after.txt && sync")
        try #require(Self.sync(h, h.storage, remote, pattern: Self.new, device: "laptop").status == 0)

        let mounted = h.dotsafe(["mount", desktop, point, "--pattern-stdin", "--sync", remote, "--device", "desktop"], input: Self.new + "\n")
        try #require(mounted.status == 0 && MountHarness.waitUntil(mounted: true, point), "\(mounted)")
        h.track(point)
        #expect(!mounted.error.contains("warning"), "\(mounted)")
        #expect(h.sh("cat a.txt offline.txt after.txt", in: point).output == "oneofflineafter")
        #expect(h.lock(point).status == 0)
        // The old pattern opens a new, empty vault there; the laptop gets the desktop's change.
        let old = h.dotsafe(["fsck", desktop, "--pattern-stdin"], input: Self.old + "\n")
        #expect(old.status == 1 && old.error.hasPrefix("dotsafe: no vault opens with this pattern in "), "\(old)")
        try #require(Self.sync(h, h.storage, remote, pattern: Self.new, device: "laptop").status == 0)
        #expect(try Self.inMount(h, h.storage, point, pattern: Self.new, "cat offline.txt").output == "offline")
        let check = h.dotsafe(["fsck", desktop, "--pattern-stdin"], input: Self.new + "\n")
        #expect(check.status == 0, "\(check)")
    }
}
