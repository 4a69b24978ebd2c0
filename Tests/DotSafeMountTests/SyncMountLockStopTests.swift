import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultCore
import VaultStore

/// A `mount --sync` locked while its round's rclone hangs: a real rclone slowed to 1 KiB/s, so
/// that the remote (a folder) answers every probe and nothing but the lock's bound ends the
/// round; or a stand-in that ignores SIGTERM; or that rclone run by a wrapper that forks it
/// (no `exec`), so that the daemon's child is the wrapper. The lock waits its 15 s, then ends
/// that rclone (SIGKILL for the deaf one) and locks: the daemon exits, no rclone of it stays to
/// touch the remote or the storage, the round leaves the storage as a cut sync does (no
/// download folder), and the next `dotsafe sync` finishes with nothing lost.
@Suite struct SyncMountLockStopTests {
    typealias Mounted = SyncMountTests

    enum Hang: String, CaseIterable, CustomTestStringConvertible {
        case upload, download
        /// An upload whose program ignores SIGTERM: only the SIGKILL after the grace ends it.
        case uploadDeafToSigterm
        /// Through a wrapper that runs rclone as its child: a signal to the wrapper alone
        /// left that rclone going.
        case uploadThroughAForkingWrapper, downloadThroughAForkingWrapper
        var testDescription: String { rawValue }
        var isDownload: Bool { self == .download || self == .downloadThroughAForkingWrapper }
        var forks: Bool { self == .uploadThroughAForkingWrapper || self == .downloadThroughAForkingWrapper }
    }

    @Test(arguments: Hang.allCases)
    func aLockEndsTheRcloneOfAHungRound(_ hang: Hang) throws {
        let h = try MountHarness()
        defer { h.finish() }
        let remote = h.base + "/remote", desktop = h.base + "/desktop-storage", started = h.base + "/copy-started"
        let log = try DatagramListener(name: h.base + "/log")
        let point = try h.mountPoint("laptop")
        // Up: a commit's round sends its files; down: an interval round brings the desktop's.
        let interval = hang.isDownload ? "2s" : "10m"
        let mounted = h.mount(point, pattern: Mounted.pattern, options: ["--sync", remote, "--sync-interval", interval, "--device", "laptop"],
                              environment: ["PATH": try Self.hangingRclone(h.base, hang, marking: started) + ":/usr/bin:/bin",
                                            "DOTSAFE_LOG_SOCKET": log.name])
        try #require(mounted.status == 0, "\(mounted)")
        let pid = try #require(MountHarness.daemonPID(for: point))

        var expected = ["a.txt": Data("laptop".utf8)]
        let big = Data((0..<1_500_000).map { _ in UInt8.random(in: 0...255) })
        if !hang.isDownload {
            try big.write(to: URL(fileURLWithPath: point + "/big.bin"))
            h.sh("printf laptop > a.txt && sync a.txt big.bin", in: point)
        } else {
            let time = Date()
            h.sh("printf laptop > a.txt && sync a.txt", in: point)
            #expect(Mounted.waitForSync(h, point, "synced", after: time, seconds: 60), "\(Mounted.syncState(h, point) ?? "no state")")
            try #require(Self.sync(h, desktop, remote, device: "desktop").status == 0)
            do {
                let vault = try Mounted.openDesktop(h, desktop)
                let file = try vault.create(.file, in: Vault.rootID, named: Array("big.bin".utf8), mode: 0o644)
                try vault.write(file, offset: 0, bytes: Array(big))
                try vault.lock()
            }
            let sent = Self.sync(h, desktop, remote, device: "desktop")
            try #require(sent.status == 0, "\(sent)")
        }
        expected["big.bin"] = big
        #expect(waitFor(seconds: 60) { FileManager.default.fileExists(atPath: started) }, "no round began its \(hang)")
        let rclones = Self.children(of: pid)
        #expect(!rclones.isEmpty, "the round's rclone is not running")
        if hang.forks { #expect(rclones.contains { !Self.children(of: $0).isEmpty }, "the wrapper runs no rclone of its own") }

        let locked = h.lock(point)
        #expect(locked.status == 0, "\(locked)")
        #expect(waitFor(seconds: 60) { kill(pid, 0) != 0 && !MountHarness.isMounted(point) }, "the daemon is still there")
        // A round of the mount's that lost races may have said so before.
        var lines: [String] = []
        while let line = log.receive(seconds: lines.isEmpty ? 20 : 2) { lines.append(line) }
        #expect(lines.last == "<12>dotsafe[\(pid)]: \(point): locked without the last sync (no answer within 15 s): "
            + "changes are sent at the next sync", "\(lines)")
        let left = Set(rclones.filter { kill($0, 0) == 0 } + Self.processes(naming: remote) + Self.processes(naming: h.storage)).sorted()
        #expect(left.isEmpty, "rclone outlived the daemon: \(left)")
        // A failing run must not leave them to the next test, nor let them race the next sync.
        for orphan in left { kill(orphan, SIGKILL) }
        #expect(waitFor(seconds: 30) { Self.processes(naming: remote).isEmpty && Self.processes(naming: h.storage).isEmpty })
        let storageNames = try FileManager.default.contentsOfDirectory(atPath: h.storage)
        #expect(!storageNames.contains { $0.hasSuffix(DownloadFolder.suffix) }, "the round's download folder stays")

        // The next sync with a working rclone finishes what the round began: both sides hold it all.
        let again = Self.sync(h, h.storage, remote, device: "laptop")
        #expect(again.status == 0, "\(again)")
        if !hang.isDownload { try #require(Self.sync(h, desktop, remote, device: "desktop").status == 0) }
        for storage in [h.storage, desktop] {
            let vault = try Mounted.openDesktop(h, storage)
            defer { try? vault.lock() }
            for (name, bytes) in expected {
                let id = try vault.lookup(Vault.rootID, Array(name.utf8))
                #expect(try vault.read(id, offset: 0, count: bytes.count + 1) == Array(bytes), "\(storage): \(name)")
            }
        }
    }

    /// `dotsafe sync` of `storage`, run again while it loses a race with a round of the mount
    /// (as its line says), or finds nothing yet of a vault the mount's round is about to send.
    static func sync(_ h: MountHarness, _ storage: String, _ remote: String, device: String) -> CommandResult {
        let arguments = ["sync", storage, remote, "--pattern", Mounted.pattern, "--device", device]
        var result = h.dotsafe(arguments)
        for _ in 0..<5 where result.status != 0 && (result.error.contains("sync again") || result.error.contains("no vault opens")) {
            Thread.sleep(forTimeInterval: 1)
            result = h.dotsafe(arguments)
        }
        return result
    }

    /// A folder to put first on PATH: its rclone runs the real one, the batch copy `hang` names
    /// (up to the remote, or down into a download folder) slowed to 1 KiB/s after marking its
    /// start, or replaced by a sleep deaf to SIGTERM; every other command as it is. A forking
    /// wrapper runs each rclone as its child and exits with its status.
    static func hangingRclone(_ base: String, _ hang: Hang, marking started: String) throws -> String {
        let bin = base + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let down = "copy:*\(DownloadFolder.suffix)"
        let cases = hang.isDownload ? "\(down))" : "\(down)) ;; copy:*)"
        let run = hang.forks ? "/usr/bin/rclone" : "exec /usr/bin/rclone", end = hang.forks ? "; exit $?" : ""
        let hanging = hang == .uploadDeafToSigterm ? "trap '' TERM; exec /bin/sleep 3600" : "\(run) \"$@\" --bwlimit 1k\(end)"
        try """
            #!/bin/sh
            for last; do :; done
            case "$1:$last" in \(cases) : > '\(started)'; \(hanging) ;; esac
            \(run) "$@"\(end)

            """.write(toFile: bin + "/rclone.sh", atomically: false, encoding: .utf8)
        let installed = CommandResult.run("/usr/bin/install", ["-m", "755", bin + "/rclone.sh", bin + "/rclone"])
        try #require(installed.succeeded, "\(installed)")
        return bin
    }

    /// The processes whose parent is `parent` (from /proc/PID/stat: after the name in parentheses,
    /// the state, then the parent's number).
    static func children(of parent: Int32) -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
            guard let pid = Int32(entry), let stat = try? readProcFile("/proc/\(entry)/stat"),
                  let end = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            return fields.count > 1 && Int32(fields[1]) == parent ? pid : nil
        }
    }

    /// The processes whose command line names `path`.
    static func processes(naming path: String) -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
            guard let pid = Int32(entry), pid != getpid(), let line = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { return nil }
            return String(decoding: line, as: UTF8.self).contains(path) ? pid : nil
        }
    }
}
