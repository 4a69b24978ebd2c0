import DotSafeTestSupport
import Foundation
import Testing

/// Issue 12, item 4: every storage file has one size, so `rsync -a`, backup tools and rclone
/// compare only the modification time, and `rsync -a` in whole seconds. Whatever the lock does
/// with times (re-creation, the lock's time set on every re-created file), a file whose bytes
/// changed never keeps the second a backup saw: an incremental `rsync -a` of the storage after
/// two vaults' sessions (at once, both locked) leaves a copy identical to it, also a copy taken
/// between the two locks.
///
/// Before the backup the storage's times are put a minute ahead of the clock (as a clock set
/// back leaves them; a lock within the second of the one before pushes them a second ahead):
/// every time the clock gives from there on falls in a second the backup saw or an earlier one,
/// as it does on a machine fast enough to run all of it within one second (CI's failure).
@Suite struct ChangedTimesTests {
    static let patternA = "b2-c2-d3-d4-c4-b4-a5"
    static let patternB = "c3-d2-e1-e2-d1-c1-b1"

    @Test(arguments: ["3600", "0"])
    func rsyncQuickCheckSeesEveryChangedFile(budget: String) throws {
        let h = try MountHarness()
        defer { h.finish() }
        let a = try h.mountPoint("a"), b = try h.mountPoint("b")
        let options = ["--recreate-budget", budget]
        try #require(h.mount(a, pattern: Self.patternA, options: options).status == 0)
        h.sh("head -c 3000000 /dev/urandom > big && echo one > small", in: a)
        try #require(h.lock(a).status == 0)
        try #require(h.sh("cd \(h.storage) && touch -d @$(( $(date +%s) + 60 )).5 -- *").status == 0)
        let backup = h.base + "/backup", between = h.base + "/between"
        try #require(h.sh("rsync -a --delete \(h.storage)/ \(backup)/").status == 0)
        let before = try CopiedFile.snapshot(backup)

        try #require(h.mount(a, pattern: Self.patternA, options: options).status == 0)
        try #require(h.mount(b, pattern: Self.patternB, options: options).status == 0)
        // A changes bytes in place (its chunks are rewritten), B writes new files, both at once.
        h.sh("(cd \(a) && dd if=/dev/urandom of=big bs=64k count=4 seek=10 conv=notrunc status=none && echo two >> small) & (cd \(b) && head -c 2000000 /dev/urandom > new) & wait")
        try #require(h.lock(a).status == 0)
        // A backup while B is mounted; then B changes in place what it wrote (and A's lock re-created).
        try #require(h.sh("rsync -a --delete \(h.storage)/ \(between)/").status == 0)
        let middle = try CopiedFile.snapshot(between)
        h.sh("dd if=/dev/urandom of=new bs=64k count=4 seek=5 conv=notrunc status=none", in: b)
        try #require(h.lock(b).status == 0)
        let after = try CopiedFile.snapshot(h.storage)

        #expect(CopiedFile.expectChangesSeen(since: before, now: after, "since the first backup") > 0,
                "the sessions changed no file in place: the test would see nothing")
        #expect(CopiedFile.expectChangesSeen(since: middle, now: after, "since the backup between the locks") > 0,
                "B changed no file in place after A's lock: the test would see nothing")
        // The quick check (size and time) copies every changed file: each backup equals the storage.
        for copy in [backup, between] {
            try #require(h.sh("rsync -a --delete \(h.storage)/ \(copy)/").status == 0)
            #expect(h.sh("diff -r \(h.storage) \(copy)").status == 0)
        }
        h.sh("rm -rf \(backup) \(between)")
    }
}
