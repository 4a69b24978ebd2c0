import Foundation
import DotSafeTestSupport
import Testing
import VaultCore
import VaultStore

/// `dotsafe sync` says the warning of a merge without a base (docs/SYNC-DESIGN.md §3.4 step 3)
/// on its standard error, beside its `synced:` line: the remote holds the generation the laptop
/// wrote and synced with, written by the desktop (what a racing root written over the laptop's
/// leaves; played here by putting back a copy the desktop then synced with).
@Suite struct RaceWarningCommandTests {
    typealias Sync = SyncCommandTests

    static func write(_ storage: String, _ name: String, _ text: String, _ environment: [String: String]) throws {
        let vault = try Vault.open(storage: try Storage.open(at: storage), secrets: try Sync.secrets(environment), options: .likeDotsafe())
        let id = try vault.create(.file, in: Vault.rootID, named: Array(name.utf8), mode: 0o644)
        try vault.write(id, offset: 0, bytes: Array(text.utf8))
        try vault.lock()
    }

    static func names(_ storage: String, _ environment: [String: String]) throws -> Set<String> {
        let vault = try Vault.open(storage: try Storage.open(at: storage), secrets: try Sync.secrets(environment), options: .likeDotsafe())
        defer { try? vault.lock() }
        return Set(try vault.contents(ofFolder: Vault.rootID).map { String(decoding: $0.0, as: UTF8.self) })
    }

    @Test func aRootAnotherDeviceWroteAtThisDevicesGenerationMergesWithTheWarning() throws {
        let (base, environment) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let laptop = base + "/laptop", desktop = base + "/desktop", remote = base + "/remote"
        #expect(CLIRun(["init", laptop], environment: environment).status == 0)
        try Self.write(laptop, "hello.txt", "hello", environment)
        #expect(Sync.sync(laptop, remote, environment, device: "laptop").status == 0)
        #expect(Sync.sync(desktop, remote, environment, device: "desktop").status == 0)
        try FileManager.default.copyItem(atPath: remote, toPath: base + "/remote-copy")

        try Self.write(laptop, "from-laptop.txt", "made on the laptop", environment)
        let up = Sync.sync(laptop, remote, environment, device: "laptop")
        #expect(up.status == 0 && up.standardError.isEmpty, "\(up)")
        try FileManager.default.removeItem(atPath: remote)
        try FileManager.default.moveItem(atPath: base + "/remote-copy", toPath: remote)
        try Self.write(desktop, "from-desktop.txt", "made on the desktop", environment)
        #expect(Sync.sync(desktop, remote, environment, device: "desktop").status == 0)

        let merge = Sync.sync(laptop, remote, environment, device: "laptop")
        #expect(merge.status == 0 && merge.standardOutput.hasPrefix("synced: "), "\(merge)")
        #expect(merge.standardError == "dotsafe: warning: another device's sync replaced this device's last root at the same moment: "
                + "merged without a common state, so files deleted since may come back and files changed on one side appear as "
                + "conflict copies\n", "\(merge)")
        let both: Set<String> = ["hello.txt", "from-laptop.txt", "from-desktop.txt"]
        #expect(try Self.names(laptop, environment) == both)
        let after = Sync.sync(desktop, remote, environment, device: "desktop")
        #expect(after.status == 0 && after.standardError.isEmpty, "\(after)")
        #expect(try Self.names(desktop, environment) == both)
    }
}
