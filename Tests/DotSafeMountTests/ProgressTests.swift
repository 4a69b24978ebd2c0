import DotSafeTestSupport
import Foundation
import Testing

/// Progress of long work (issue 16 item 7): on a terminal (a pseudo-terminal made by script(1))
/// `fsck`, `audit` and `sync` draw done/total and a rate on one line and erase it before their
/// result; with standard error a pipe they print exactly what they printed before, nothing more.
@Suite struct ProgressTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    /// Runs the built dotsafe under script(1), so that its standard streams are a terminal;
    /// what the terminal received, control characters included.
    static func onTerminal(_ h: MountHarness, _ arguments: [String]) -> CommandResult {
        let command = ([MountHarness.binary] + arguments).map { "'\($0)'" }.joined(separator: " ")
        return h.run("/usr/bin/script", ["-q", "-e", "-c", command, "/dev/null"], input: nil)
    }

    @Test func fsckAndAuditShowProgressOnATerminalAndNothingElsewhere() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        // 40 chunks and a few pack members.
        h.sh("head -c 10485760 /dev/urandom > big.bin && for i in 1 2 3; do echo $i > small-$i; done && sync big.bin", in: vault)
        #expect(h.lock(vault).status == 0)

        let fsck = Self.onTerminal(h, ["fsck", h.storage, "--pattern", Self.pattern])
        #expect(fsck.status == 0, "\(fsck)")
        #expect(fsck.output.contains("\r\u{1B}[Kfsck: 0/43 chunks (0%)"), "\(fsck.output)")
        let last = try #require(fsck.output.range(of: "\r\u{1B}[Kfsck: 43/43 chunks (100%)"), "\(fsck.output)")
        // A rate (once 0.05 s have passed), then the line erased before the result.
        let after = fsck.output[last.upperBound...]
        #expect(after.hasPrefix("\r\u{1B}[KChecked ") || (after.hasPrefix(", ") && after.contains("/s\r\u{1B}[KChecked ")), "\(after)")

        let piped = h.dotsafe(["fsck", h.storage, "--pattern-stdin"], input: Self.pattern + "\n")
        #expect(piped.status == 0 && !piped.error.contains("fsck:") && !piped.error.contains("\r") && !piped.output.contains("\r"), "\(piped)")
        #expect(piped.output.hasPrefix("Checked 5 items, 40 chunks, 3 pack members"), "\(piped)")

        let files = try FileManager.default.contentsOfDirectory(atPath: h.storage).count
        let audit = Self.onTerminal(h, ["audit", h.storage])
        #expect(audit.status == 0, "\(audit)")
        #expect(audit.output.contains("\r\u{1B}[Kaudit: \(files)/\(files) files (100%)") && audit.output.contains("\r\u{1B}[KStorage "), "\(audit.output)")
        let pipedAudit = h.dotsafe(["audit", h.storage])
        #expect(pipedAudit.status == 0 && pipedAudit.error.isEmpty && !pipedAudit.output.contains("\r"), "\(pipedAudit)")
    }

    /// The first sync of a vault of 40 chunks up, then a new device's down: each batch of files
    /// from 0 to all of them, in files and megabytes; a pipe gets the summary line alone.
    @Test func syncShowsFilesAndBytesOnATerminalAndNothingElsewhere() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("head -c 10485760 /dev/urandom > big.bin && sync big.bin", in: vault)
        #expect(h.lock(vault).status == 0)
        let remote = h.base + "/remote"

        let up = Self.onTerminal(h, ["sync", h.storage, remote, "--pattern", Self.pattern, "--device", "laptop"])
        #expect(up.status == 0, "\(up)")
        // The summary counts the unlock record and the two root files too, written one by one.
        let upLine = try #require(up.output.firstMatch(of: /synced: (\d+) files up/))
        let filesUp = try #require(Int(upLine.1)) - 3
        #expect(filesUp >= 40, "\(up.output)")
        let megabytes = String(format: "%.1f", Double(filesUp * 262_192) / 1e6)
        #expect(up.output.contains("\r\u{1B}[Ksync up: 0/\(filesUp) files (0%), 0.0/\(megabytes) MB"), "\(up.output)")
        let full = "\r\u{1B}[Ksync up: \(filesUp)/\(filesUp) files (100%), \(megabytes)/\(megabytes) MB"
        #expect(up.output.contains(full), "\(up.output)")
        #expect(up.output.contains(/files\/s, \d+\.\d MB\/s/), "a rate once 0.05 s have passed: \(up.output)")
        #expect(up.output.contains("\r\u{1B}[Ksynced: \(filesUp + 3) files up"), "the line erased before the result: \(up.output)")

        let down = Self.onTerminal(h, ["sync", h.base + "/desktop", remote, "--pattern", Self.pattern, "--device", "desktop"])
        #expect(down.status == 0, "\(down)")
        let downLine = try #require(down.output.firstMatch(of: /, (\d+) down/))
        let filesDown = try #require(Int(downLine.1))
        // Each batch (the index pages, then the files the merge wants) from 0 to its size.
        let batches = down.output.matches(of: /sync down: 0\/(\d+) files/).compactMap { Int($0.1) }
        #expect(!batches.isEmpty && batches.reduce(0, +) == filesDown, "\(down.output)")
        for total in batches { #expect(down.output.contains("sync down: \(total)/\(total) files (100%)"), "\(down.output)") }

        let piped = h.dotsafe(["sync", h.base + "/phone", remote, "--pattern-stdin", "--device", "phone"], input: Self.pattern + "\n")
        #expect(piped.status == 0 && piped.error.isEmpty, "\(piped)")
        #expect(piped.output.hasPrefix("synced: ") && !piped.output.contains("\r") && piped.output.split(separator: "\n").count == 1, "\(piped)")
    }

    /// `mount --sync` of a new device on a terminal shows its first round's files coming down
    /// before it says the vault is mounted; through a pipe it says only that.
    @Test func mountSyncShowsItsFirstRoundOnATerminal() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let laptop = try h.mountPoint()
        try #require(h.mount(laptop, pattern: Self.pattern).status == 0)
        h.sh("head -c 4194304 /dev/urandom > data.bin && sync data.bin", in: laptop)
        #expect(h.lock(laptop).status == 0)
        let remote = h.base + "/remote"
        let up = h.dotsafe(["sync", h.storage, remote, "--pattern", Self.pattern, "--device", "laptop"])
        try #require(up.status == 0, "\(up)")

        let phone = try h.mountPoint("phone"), phoneStorage = h.base + "/phone-storage"
        try #require(h.dotsafe(["init", phoneStorage]).status == 0)
        h.track(phone)
        let mounted = Self.onTerminal(h, ["mount", phoneStorage, phone, "--pattern", Self.pattern, "--sync", remote, "--device", "phone"])
        #expect(mounted.status == 0, "\(mounted)")
        let batches = mounted.output.matches(of: /sync down: 0\/(\d+) files/).compactMap { Int($0.1) }
        #expect(!batches.isEmpty, "\(mounted.output)")
        for total in batches { #expect(mounted.output.contains("sync down: \(total)/\(total) files (100%)"), "\(mounted.output)") }
        let erased = try #require(mounted.output.range(of: "\r\u{1B}[K", options: .backwards), "\(mounted.output)")
        #expect(mounted.output[erased.upperBound...].contains("Mounted the vault at \(phone)"), "\(mounted.output)")
        #expect(MountHarness.waitUntil(mounted: true, phone))
        #expect(FileManager.default.fileExists(atPath: phone + "/data.bin"), "the first round pulled the vault")
        #expect(h.lock(phone).status == 0)

        let tablet = try h.mountPoint("tablet"), tabletStorage = h.base + "/tablet-storage"
        try #require(h.dotsafe(["init", tabletStorage]).status == 0)
        h.track(tablet)
        let piped = CommandResult.run(MountHarness.binary, ["mount", tabletStorage, tablet, "--pattern-stdin", "--sync", remote, "--device", "tablet"],
                                      input: Self.pattern + "\n", environment: h.environment)
        #expect(piped.status == 0 && piped.error.isEmpty, "\(piped)")
        #expect(piped.output == "Mounted the vault at \(tablet). Lock it with: dotsafe lock \(tablet)\n", "\(piped)")
        #expect(MountHarness.waitUntil(mounted: true, tablet))
        #expect(h.lock(tablet).status == 0)
    }
}
