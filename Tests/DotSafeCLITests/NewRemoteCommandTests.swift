import Foundation
import DotSafeTestSupport
import Testing
import VaultCore
import VaultStore

/// `dotsafe sync --new-remote` through the built binary (README, docs/SYNC-DESIGN.md §3.4
/// "Moving to a new remote"): the laptop and the desktop synced with one remote, then write
/// offline; the user moves to another. Without the flag the line that names it, exit 1, nothing
/// written there; with it the laptop puts the vault up and the desktop merges into it with the
/// warning on its standard error; then both hold both files, and plain syncs go on.
@Suite struct NewRemoteCommandTests {
    typealias Sync = SyncCommandTests
    typealias Files = RaceWarningCommandTests

    static func newRemote(_ storage: String, _ remote: String, _ environment: [String: String], device: String) -> CLIRun {
        CLIRun(["sync", storage, remote, "--pattern", Sync.pattern, "--device", device, "--new-remote"], environment: environment)
    }

    @Test func bothDevicesMoveToANewRemoteWithTheFlag() throws {
        let (base, environment) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let laptop = base + "/laptop", desktop = base + "/desktop", old = base + "/remote", remote = base + "/new-remote"
        #expect(CLIRun(["init", laptop], environment: environment).status == 0)
        try Files.write(laptop, "hello.txt", "hello", environment)
        #expect(Sync.sync(laptop, old, environment, device: "laptop").status == 0)
        #expect(Sync.sync(desktop, old, environment, device: "desktop").status == 0)
        try Files.write(laptop, "from-laptop.txt", "made on the laptop", environment)
        try Files.write(desktop, "from-desktop.txt", "made on the desktop", environment)

        let refused = Sync.sync(laptop, remote, environment, device: "laptop")
        #expect(refused.status == 1 && refused.standardError == "dotsafe: \(SyncRefusal.otherRemote)\n", "\(refused)")
        #expect(refused.standardError.contains("'dotsafe sync --new-remote' puts the vault there"), "\(refused)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: remote)) ?? []).isEmpty, "nothing written on the new remote")

        let moved = Self.newRemote(laptop, remote, environment, device: "laptop")
        #expect(moved.status == 0 && moved.standardOutput.hasPrefix("synced: ") && moved.standardError.isEmpty, "\(moved)")
        let merge = Self.newRemote(desktop, remote, environment, device: "desktop")
        #expect(merge.status == 0 && merge.standardOutput.hasPrefix("synced: "), "\(merge)")
        #expect(merge.standardError == "dotsafe: warning: this remote holds another state of this vault than this device synced "
                + "with: merged without a common state, so files deleted since may come back and files changed on both sides appear "
                + "as conflict copies\n", "\(merge)")
        let after = Sync.sync(laptop, remote, environment, device: "laptop")
        #expect(after.status == 0 && after.standardError.isEmpty, "\(after)")
        let both: Set<String> = ["hello.txt", "from-laptop.txt", "from-desktop.txt"]
        #expect(try Files.names(laptop, environment) == both)
        #expect(try Files.names(desktop, environment) == both)
        #expect(Sync.sync(desktop, remote, environment, device: "desktop").standardError.isEmpty)

        let help = CLIRun(["sync", "--help"], environment: environment)
        #expect(help.status == 0 && help.standardOutput.contains("--new-remote"), "\(help)")
    }
}
