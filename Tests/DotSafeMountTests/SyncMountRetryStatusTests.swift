import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// `dotsafe status` while a `mount --sync` round runs after a failed one: it says the last
/// failure, its time and reason, and that the sync is retrying (`last sync failed at TIME: WHY;
/// retrying`; the table: `failed HH:MM:SS, retrying`), not `syncing since TIME`, which hid why
/// nothing reached the remote while rounds against a failing one followed each other.
@Suite struct SyncMountRetryStatusTests {
    typealias Mounted = SyncMountTests

    @Test func aRoundAfterAFailureSaysTheFailure() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let remote = h.base + "/remote", bin = h.base + "/bin"
        let failing = h.base + "/failing", holding = h.base + "/holding", held = h.base + "/held"
        // rclone that fails every command while `failing` exists, and waits while `holding` does.
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try """
            #!/bin/sh
            if [ -e '\(failing)' ]; then echo 'ERROR : injected failure' >&2; exit 1; fi
            if [ -e '\(holding)' ]; then : > '\(held)'; while [ -e '\(holding)' ]; do /bin/sleep 0.1; done; fi
            exec /usr/bin/rclone "$@"

            """.write(toFile: bin + "/rclone.sh", atomically: false, encoding: .utf8)
        let installed = CommandResult.run("/usr/bin/install", ["-m", "755", bin + "/rclone.sh", bin + "/rclone"])
        try #require(installed.succeeded, "\(installed)")
        let point = try h.mountPoint("laptop")
        let mounted = h.mount(point, pattern: Mounted.pattern, options: ["--sync", remote, "--sync-interval", "2s", "--device", "laptop"],
                              environment: ["PATH": bin + ":/usr/bin:/bin"])
        try #require(mounted.status == 0, "\(mounted)")
        defer { try? FileManager.default.removeItem(atPath: holding) }

        let time = Date()
        FileManager.default.createFile(atPath: failing, contents: nil)
        h.sh("printf laptop > a.txt && sync a.txt", in: point)
        #expect(Mounted.waitForSync(h, point, "failed", after: time, seconds: 60), "\(Mounted.syncState(h, point) ?? "no state")")
        let failed = try #require(Mounted.syncState(h, point))
        try #require(failed.hasPrefix("failed at ") && failed.contains("injected failure"), "\(failed)")
        let reason = String(failed.dropFirst("failed at ".count + 20 + ": ".count))

        // The next round waits in its first rclone command: status is asked meanwhile.
        FileManager.default.createFile(atPath: holding, contents: nil)
        try FileManager.default.removeItem(atPath: failing)
        #expect(waitFor(seconds: 60) { FileManager.default.fileExists(atPath: held) }, "no round began")
        let retrying = try #require(Mounted.currentSyncState(h, point))
        #expect(retrying.hasPrefix("last sync failed at ") && retrying.hasSuffix(": \(reason); retrying"), "\(retrying)")
        let stamp = String(retrying.dropFirst("last sync failed at ".count).prefix(20))
        let failedAt = try #require(ISO8601DateFormatter().date(from: stamp), "\(retrying)")
        #expect(failedAt >= time.addingTimeInterval(-1), "\(retrying)")
        let table = h.dotsafe(["status"])
        #expect(table.status == 0 && table.output.contains("  failed ") && table.output.contains(", retrying"), "\(table)")

        let resumed = Date()
        try FileManager.default.removeItem(atPath: holding)
        #expect(Mounted.waitForSync(h, point, "synced", after: resumed, seconds: 60), "\(Mounted.syncState(h, point) ?? "no state")")
        #expect(h.lock(point).status == 0)
    }
}
