import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultCore
import VaultFormat
import VaultStore

/// A `mount --sync` locked (`dotsafe lock`, SIGTERM) while a round commits its merge of another
/// device's files, past the lock's bound of 15 s and the rclone stop's 6 s: no rclone runs then,
/// so no signal ends the round, and the close waits for the commit on the vault's lock. The
/// merge is made 30 s slow by the daemon's one test switch (DOTSAFE_TEST_MERGE_SECONDS, in the
/// commit, under the vault's lock); the rest is real: the mount, the rounds, rclone against a
/// folder remote, the lock. After it the daemon has exited 0 (a round of a commit that went on
/// past the close once crashed it, in the middle of the lock's re-creation of the storage), the
/// storage is whole (files a multiple of 16, no `.recreated` copy or download folder left, a
/// read-only fsck clean), the merge and every byte written before the lock are there, and the
/// next sync completes.
@Suite struct SyncMountCommitLockTests {
    typealias Mounted = SyncMountTests
    typealias Stopped = SyncMountLockStopTests

    enum Lock: String, CaseIterable, CustomTestStringConvertible {
        /// The last round merges.
        case command, sigterm
        /// A round a commit started merges, holding the file system's requests (so `dotsafe
        /// lock`, which first commits, would wait for it before it unmounts): the last round
        /// waits behind it.
        case sigtermDuringCommitsRound
        var testDescription: String { rawValue }
    }

    static let mergeSeconds = 30.0

    @Test(arguments: Lock.allCases)
    func aLockDuringARoundsMergeWaitsForItsCommitAndLosesNothing(_ lock: Lock) throws {
        let h = try MountHarness()
        defer { h.finish() }
        let remote = h.base + "/remote", desktop = h.base + "/desktop-storage", said = h.base + "/daemon-said"
        let log = try DatagramListener(name: h.base + "/log")
        let point = try h.mountPoint("laptop")
        let options = ["--sync", remote, "--sync-interval", "10m", "--device", "laptop"]
        // In the foreground: the daemon is this test's child, its exit and standard error seen.
        try #require(FileManager.default.createFile(atPath: said, contents: nil))
        let (daemon, output) = try h.startForeground(point, pattern: Mounted.pattern, standardError: try FileHandle(forWritingTo: URL(fileURLWithPath: said)),
                                                     options: options, environment: ["DOTSAFE_LOG_SOCKET": log.name,
                                                                                     "DOTSAFE_TEST_MERGE_SECONDS": "\(Int(Self.mergeSeconds))"])
        try #require(MountHarness.waitUntil(mounted: true, point, seconds: 60), "not mounted: \(Self.text(said))")
        let pid = daemon.processIdentifier

        let time = Date()
        h.sh("printf laptop > a.txt && sync a.txt", in: point)
        #expect(Mounted.waitForSync(h, point, "synced", after: time, seconds: 60), "\(Mounted.syncState(h, point) ?? "no state")")
        // The desktop joins, then sends many files of its own: the round merges them.
        let joined = Stopped.sync(h, desktop, remote, device: "desktop")
        try #require(joined.status == 0, "\(joined)")
        var expected = ["a.txt": Data("laptop".utf8)]
        do {
            let vault = try Mounted.openDesktop(h, desktop)
            for index in 0..<200 {
                let name = "desktop-\(index).txt", bytes = Data("from the desktop, file \(index)\n".utf8)
                let file = try vault.create(.file, in: Vault.rootID, named: Array(name.utf8), mode: 0o644)
                try vault.write(file, offset: 0, bytes: Array(bytes))
                expected[name] = bytes
            }
            try vault.lock()
        }
        let sent = Stopped.sync(h, desktop, remote, device: "desktop")
        try #require(sent.status == 0, "\(sent)")
        // Written here just before the lock, not yet committed: the round's commit takes it.
        let late = Data((0..<300_000).map { _ in UInt8.random(in: 0...255) })
        try late.write(to: URL(fileURLWithPath: point + "/late.bin"))
        expected["late.bin"] = late

        if lock == .sigtermDuringCommitsRound {
            h.sh("sync late.bin", in: point)
            #expect(waitFor(seconds: 60) { Self.threadNames(pid).contains(Self.mergingThread) }, "no round merges")
        }
        switch lock {
        case .command:
            let locked = h.lock(point)
            #expect(locked.status == 0 && locked.output == "Locked \(point).\n", "\(locked)")
        case .sigterm, .sigtermDuringCommitsRound:
            #expect(kill(pid, SIGTERM) == 0)
        }
        // Neither crashed nor cut: the daemon locked and exited, as after any lock.
        daemon.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(daemon.terminationReason == .exit && daemon.terminationStatus == 0 && text.hasSuffix("Locked \(point).\n"),
                "\(daemon.terminationReason) \(daemon.terminationStatus): \(text) \(Self.text(said))")
        #expect(!MountHarness.isMounted(point))
        var lines: [String] = []
        while let line = log.receive(seconds: lines.isEmpty ? 20 : 2) { lines.append(line) }
        // What the lock did: it waited for the commit (the line once said the sync did not
        // answer, as for a remote that hangs).
        #expect(lines.last == "<12>dotsafe[\(pid)]: \(point): locked without the last sync (a sync's commit under way "
            + "at 15 s was waited for; what it merged is kept here): changes are sent at the next sync", "\(lines)")
        #expect(Stopped.processes(naming: remote).isEmpty, "rclone outlived the daemon")
        let names = try FileManager.default.contentsOfDirectory(atPath: h.storage)
        #expect(names.allSatisfy(FileName.isWellFormed) && names.count % 16 == 0, "\(names.count) files: \(names.filter { !FileName.isWellFormed($0) })")
        let fsck = h.dotsafe(["fsck", h.storage, "--pattern-stdin"], input: Mounted.pattern + "\n")
        #expect(fsck.status == 0 && fsck.error.isEmpty, "\(fsck)")
        // The merge the lock met is committed here, not yet sent.
        try Self.expect(expected, in: h.storage, h)

        // Mounted again (its first round sends the merge), all of it there; the desktop gets it.
        let again = h.mount(point, pattern: Mounted.pattern, options: options)
        try #require(again.status == 0 && !again.error.contains("warning"), "\(again)")
        for (name, bytes) in expected {
            #expect(FileManager.default.contents(atPath: point + "/" + name) == bytes, "\(name)")
        }
        #expect(Mounted.syncState(h, point)?.hasPrefix("synced at ") == true, "\(Mounted.syncState(h, point) ?? "no state")")
        #expect(h.lock(point).status == 0)
        let back = Stopped.sync(h, desktop, remote, device: "desktop")
        #expect(back.status == 0, "\(back)")
        try Self.expect(expected, in: desktop, h)
    }

    /// `dotsafe status` while a round commits its merge (made slow by the test switch, under
    /// the vault's lock): the daemon answered it only once the merge was over, so status gave up
    /// after its 2 s ("does not answer", no state) exactly when the user asks whether it syncs.
    /// It answers now while the merge still runs (its thread still named so): the sync state
    /// says the round runs and since when, `pending` is unknown (null, "?" in the table) while
    /// the commit holds the vault. After the merge: synced, the other device's file there.
    @Test func statusAnswersWhileARoundCommitsItsMerge() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let remote = h.base + "/remote", desktop = h.base + "/desktop-storage"
        let point = try h.mountPoint("laptop")
        let options = ["--sync", remote, "--sync-interval", "10m", "--device", "laptop"]
        let mounted = h.mount(point, pattern: Mounted.pattern, options: options, environment: ["DOTSAFE_TEST_MERGE_SECONDS": "20"])
        try #require(mounted.status == 0, "\(mounted)")
        let pid = try #require(MountHarness.daemonPID(for: point))
        var time = Date()
        h.sh("printf laptop > a.txt && sync a.txt", in: point)
        #expect(Mounted.waitForSync(h, point, "synced", after: time, seconds: 60), "\(Mounted.syncState(h, point) ?? "no state")")
        let joined = Stopped.sync(h, desktop, remote, device: "desktop")
        try #require(joined.status == 0, "\(joined)")
        do {
            let vault = try Mounted.openDesktop(h, desktop)
            let file = try vault.create(.file, in: Vault.rootID, named: Array("desktop.txt".utf8), mode: 0o644)
            try vault.write(file, offset: 0, bytes: Array("from the desktop".utf8))
            try vault.lock()
        }
        let sent = Stopped.sync(h, desktop, remote, device: "desktop")
        try #require(sent.status == 0, "\(sent)")

        // A commit here: its round merges the desktop's file, for 20 s.
        time = Date()
        h.sh("printf more > b.txt && sync b.txt", in: point)
        try #require(waitFor(seconds: 60) { Self.threadNames(pid).contains(Self.mergingThread) }, "no round merges")
        // Bounded by status's own wait for each daemon (2 s), and by timeout(1) should it hang.
        let status = h.run("/usr/bin/timeout", ["60", MountHarness.binary, "status", "--json"], input: nil)
        let table = h.run("/usr/bin/timeout", ["60", MountHarness.binary, "status"], input: nil)
        let stillMerging = Self.threadNames(pid).contains(Self.mergingThread)
        #expect(stillMerging, "the merge ended before status answered: this test proves nothing")
        #expect(status.status == 0 && status.error.isEmpty, "\(status)")
        let entries = (try? JSONSerialization.jsonObject(with: Data(status.output.utf8))) as? [[String: Any]]
        let entry = try #require(entries?.first { $0["mountpoint"] as? String == point }, "\(status)")
        let sync = entry["sync"] as? String ?? "none"
        #expect(sync.hasPrefix("syncing since "), "\(status)")
        let since = ISO8601DateFormatter().date(from: String(sync.dropFirst("syncing since ".count)))
        #expect(since.map { $0 >= time.addingTimeInterval(-1) } == true, "\(sync)")
        #expect(entry["pending"] is NSNull, "\(status)")
        let row = table.output.split(separator: "\n").first { $0.hasPrefix(point + " ") }.map(String.init) ?? ""
        #expect(row.contains("  ?  ") && row.contains("  syncing "), "\(table)")

        // The merge ends as before: synced, the desktop's file here, nothing left to write.
        #expect(Mounted.waitForSync(h, point, "synced", after: time, seconds: 90), "\(Mounted.syncState(h, point) ?? "no state")")
        // Nothing left to write (null again only while some commit holds the vault).
        var after = CommandResult(status: -1, output: "", error: "")
        #expect(waitFor(seconds: 30) {
            after = h.dotsafe(["status", "--json"])
            let settled = ((try? JSONSerialization.jsonObject(with: Data(after.output.utf8))) as? [[String: Any]])?.first
            return settled?["pending"] as? Bool == false
        }, "\(after)")
        #expect(FileManager.default.contents(atPath: point + "/desktop.txt") == Data("from the desktop".utf8))
        #expect(FileManager.default.contents(atPath: point + "/b.txt") == Data("more".utf8))
        #expect(h.lock(point).status == 0)
    }

    static let mergingThread = "merging"

    static func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// The names of the threads of process `pid`.
    static func threadNames(_ pid: Int32) -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap { try? readProcFile("/proc/\(pid)/task/\($0)/comm").trimmingCharacters(in: .newlines) }
    }

    /// Each file of `expected` holds its bytes in the vault of `storage`, opened in this process.
    static func expect(_ expected: [String: Data], in storage: String, _ h: MountHarness,
                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        let vault = try Mounted.openDesktop(h, storage)
        defer { try? vault.lock() }
        for (name, bytes) in expected {
            let id = try vault.lookup(Vault.rootID, Array(name.utf8))
            #expect(try vault.read(id, offset: 0, count: bytes.count + 1) == Array(bytes), "\(storage): \(name)", sourceLocation: sourceLocation)
        }
    }
}
