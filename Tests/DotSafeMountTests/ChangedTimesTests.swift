import DotSafeTestSupport
import Foundation
import Testing

/// Issue 12, item 4: every storage file has one size, so `rsync -a`, backup tools and rclone
/// compare only the modification time. Whatever the lock does with times (re-creation, the
/// lock's time set on every re-created file), a file whose bytes changed never keeps the time
/// a backup saw: an incremental `rsync -a` of the storage after two vaults' sessions (at once,
/// both locked) leaves a copy identical to it.
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
        let backup = h.base + "/backup"
        try #require(h.sh("rsync -a --delete \(h.storage)/ \(backup)/").status == 0)
        let before = try Self.files(backup, h)

        try #require(h.mount(a, pattern: Self.patternA, options: options).status == 0)
        try #require(h.mount(b, pattern: Self.patternB, options: options).status == 0)
        // A changes bytes in place (its chunks are rewritten), B writes new files, both at once.
        h.sh("(cd \(a) && dd if=/dev/urandom of=big bs=64k count=4 seek=10 conv=notrunc status=none && echo two >> small) & (cd \(b) && head -c 2000000 /dev/urandom > new) & wait")
        try #require(h.lock(a).status == 0)
        try #require(h.lock(b).status == 0)
        let after = try Self.files(h.storage, h)

        var changed = 0
        for (name, now) in after {
            guard let old = before[name], old.digest != now.digest else { continue }
            changed += 1
            #expect(now.modification != old.modification, "\(name) changed its bytes but kept its time")
            #expect(now.modification > old.modification, "\(name) changed its bytes and got an older time")
        }
        #expect(changed > 0, "the sessions changed no file in place: the test would see nothing")
        // The quick check (size and time) copies every changed file: the backup equals the storage.
        try #require(h.sh("rsync -a --delete \(h.storage)/ \(backup)/").status == 0)
        #expect(h.sh("diff -r \(h.storage) \(backup)").status == 0)
        h.sh("rm -rf \(backup)")
    }

    struct Seen: Equatable { var digest: String; var modification: Int64 }

    /// Each file's SHA-256 and modification time (nanoseconds), read with tools as a backup would.
    static func files(_ folder: String, _ h: MountHarness) throws -> [String: Seen] {
        let digests = h.sh("cd \(folder) && sha256sum -- *").output
        let times = h.sh("cd \(folder) && stat -c '%n %.9Y' -- *").output
        var result: [String: Seen] = [:]
        for line in digests.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            result[String(parts[1])] = Seen(digest: String(parts[0]), modification: 0)
        }
        for line in times.split(separator: "\n") {
            let parts = line.split(separator: " ")
            let seconds = parts[1].split(separator: ".")
            result[String(parts[0])]?.modification = Int64(seconds[0])! * 1_000_000_000 + Int64(seconds[1])!
        }
        return result
    }
}
