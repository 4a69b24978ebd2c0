import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// `dotsafe upgrade` (docs/FORMAT.md §15.1), run as the built executable on real storages with
/// today's release: it says what it does and why older releases elsewhere stop opening
/// the vault, asks, converts by one commit, and `fsck` finds the vault clean; a vault of index 3
/// already, a declined answer, a pattern that opens nothing and a read-only storage each end in
/// one line with nothing written. A release of index 2 (the tests' switch) has no such command.
@Suite struct UpgradeCommandTests {
    static let pattern = FsckCommandTests.pattern

    /// The built `dotsafe` with the workspace's environment (and PATH), playing a release of
    /// index 2 when `switchOn` is false, `input` on standard input. `wrapper`: a program and arguments that run it.
    static func run(_ arguments: [String], _ environment: [String: String], input: String? = nil, switchOn: Bool = true,
                    wrapper: [String] = []) -> CommandResult {
        var environment = environment
        environment["PATH"] = ProcessInfo.processInfo.environment["PATH"]
        environment["DOTSAFE_INDEX_THREE"] = switchOn ? nil : "0"
        let command = wrapper + [MountHarness.binary] + arguments
        return CommandResult.run(command[0], Array(command.dropFirst()), input: input, environment: environment)
    }

    static func upgrade(_ fixture: FsckCommandTests.Fixture, _ extra: [String] = [], input: String? = nil, pattern: String = pattern,
                        switchOn: Bool = true, wrapper: [String] = []) -> CommandResult {
        run(["upgrade", fixture.storage, "--pattern", pattern] + extra, fixture.environment, input: input, switchOn: switchOn, wrapper: wrapper)
    }

    /// `fsck` of the fixture's storage by the executable, index 3 read with the switch.
    static func fsck(_ fixture: FsckCommandTests.Fixture, switchOn: Bool = true) -> CommandResult {
        run(["fsck", fixture.storage, "--pattern", pattern], fixture.environment, switchOn: switchOn)
    }

    /// The vault's index version, and every file's bytes, from a read-only open with index 3.
    static func look(_ fixture: FsckCommandTests.Fixture) throws -> (version: Int, contents: [String: [UInt8]]) {
        var options = Vault.Options(readOnly: true, cacheBytes: 8 << 20)
        options.indexThree = true
        let vault = try Vault.open(storage: try Storage.open(at: fixture.storage), secrets: try fixture.secrets(), options: options)
        defer { try? vault.lock() }
        var contents: [String: [UInt8]] = [:]
        for path in fixture.contents.keys {
            let id = try fixture.id(path, in: vault)
            contents[path] = try vault.read(id, offset: 0, count: Int(try vault.attributes(id).size))
        }
        return (vault.indexVersion, contents)
    }

    /// The lines of standard error that are errors (hints of a weak pattern aside).
    static func errors(_ result: CommandResult) -> [String] {
        result.error.split(separator: "\n").map(String.init).filter { $0.hasPrefix("dotsafe:") }
    }

    @Test func anIndexTwoVaultIsConvertedAfterYesAndFsckFindsItClean() throws {
        let fixture = try FsckCommandTests.fixture()
        defer { try? FileManager.default.removeItem(atPath: fixture.base) }
        let run = Self.upgrade(fixture, input: "y\n")
        #expect(run.status == 0, "\(run)")
        for line in ["The vault in \(fixture.storage) has index version 2.",
                     "Upgrade writes its whole index again as index version 3, in one commit.",
                     "Releases of DotSafe without index version 3 will no longer open it."] {
            #expect(run.output.contains(line + "\n"), "\(line)\n\(run)")
        }
        #expect(run.error.contains("Convert it now? [y/N] "), "\(run)")
        #expect(run.output.contains("Converted the vault in \(fixture.storage) to index version 3 (generation "), "\(run)")
        #expect(Self.errors(run).isEmpty, "\(run)")
        let found = try Self.look(fixture)
        #expect(found.version == 3 && found.contents == fixture.contents)

        let checked = Self.fsck(fixture)
        #expect(checked.status == 0 && checked.output.hasSuffix(": clean.\n"), "\(checked)")
        #expect(checked.output.contains("6 items, 5 chunks, 2 pack members"), "\(checked)")
        let older = Self.fsck(fixture, switchOn: false)
        #expect(older.status == 1, "\(older)")
        #expect(Self.errors(older) == ["dotsafe: the vault was made by a newer DotSafe (format version 3); update DotSafe to open it"], "\(older)")

        let converted = try fixture.snapshot()
        let again = Self.upgrade(fixture)
        #expect(again.status == 0, "\(again)")
        #expect(again.output == "The vault in \(fixture.storage) has index version 3 already: nothing to do.\n", "\(again)")
        #expect(!again.error.contains("[y/N]"), "no question: \(again)")
        #expect(try fixture.snapshot() == converted, "nothing written")
    }

    @Test func declinedAndRefusedUpgradesSayOneLineAndChangeNothing() throws {
        let fixture = try FsckCommandTests.fixture()
        defer { try? FileManager.default.removeItem(atPath: fixture.base) }
        let before = try fixture.snapshot()
        let storage = fixture.storage
        let cases: [(String, CommandResult)] = [
            ("dotsafe: not converted: nothing was changed", Self.upgrade(fixture, input: "n\n")),
            ("dotsafe: not converted: nothing was changed", Self.upgrade(fixture)),
            ("dotsafe: no vault opens with this pattern in \(storage): nothing to upgrade; nothing was written",
             Self.upgrade(fixture, ["--yes"], pattern: "a1-b2-c3-d4-e5-e4-d3")),
            ("dotsafe: \(storage) is on a read-only file system: nothing was upgraded",
             // A read-only bind mount in a mount namespace of its own: gone with the process.
             Self.upgrade(fixture, ["--yes"], wrapper: ["/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
                                                        "mount --bind \"$0\" \"$0\" && mount -o remount,bind,ro \"$0\" && exec \"$@\"",
                                                        storage])),
            ("dotsafe: unknown command 'upgrade'", Self.upgrade(fixture, ["--yes"], switchOn: false)),
        ]
        for (message, result) in cases {
            #expect(result.status == (message.contains("unknown command") ? 64 : 1), "\(message)\n\(result)")
            #expect(Self.errors(result) == [message], "\(result)")
            #expect(try fixture.snapshot() == before, "\(message): nothing written")
        }
        #expect(try Self.look(fixture).version == 2)
        let checked = Self.fsck(fixture)
        #expect(checked.status == 0 && checked.output.hasSuffix(": clean.\n"), "\(checked)")
    }

    @Test func aSharedVaultIsToldWhyAndConvertsWithYes() throws {
        let fixture = try FsckCommandTests.fixture()
        defer { try? FileManager.default.removeItem(atPath: fixture.base) }
        let salt = try #require(try Keyring(option: nil, environment: fixture.environment).patternSalt())
        let storage = try Storage.open(at: fixture.storage)
        let other = try Vault.open(storage: storage, secrets: try VaultSecrets(pattern: Pattern(parsing: "a1-b2-c3-d4-e5-e4-d3"), salt: salt))
        let code = try other.contactCode().code
        try other.lock()
        let owner = try Vault.open(storage: storage, secrets: try fixture.secrets())
        try owner.share(with: code)
        try owner.lock()

        let run = Self.upgrade(fixture, ["--yes"])
        #expect(run.status == 0, "\(run)")
        for line in ["It has 1 grant (people it is shared with): releases of DotSafe without index version 3",
                     "will no longer open it there. Update DotSafe on every device and for every grantee first."] {
            #expect(run.output.contains(line + "\n"), "\(line)\n\(run)")
        }
        #expect(!run.error.contains("[y/N]"), "--yes asks nothing: \(run)")
        let found = try Self.look(fixture)
        #expect(found.version == 3 && found.contents == fixture.contents)
        let checked = Self.fsck(fixture)
        #expect(checked.status == 0 && checked.output.hasSuffix(": clean.\n"), "\(checked)")
    }

    /// The storage the format-1 release wrote: upgraded to format 2 and converted by one commit.
    @Test func theFormatOneFixtureIsUpgradedAndConverted() throws {
        let (base, environment) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let archive = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("VaultCoreTests/Fixtures/format1.tar.gz").path
        let untar = CommandResult.run("/bin/tar", ["-xzf", archive, "-C", base])
        try #require(untar.status == 0, "\(untar.error)")
        let pattern = "a1-b2-c3-d4-e5-e4-d3"
        let run = Self.run(["upgrade", base + "/storage", "--pattern", pattern, "--yes"], environment)
        #expect(run.status == 0, "\(run)")
        #expect(run.output.contains("has index version 1 (storage format 1).\n"), "\(run)")
        #expect(run.output.contains("in one commit that also makes it format 2.\n"), "\(run)")
        let checked = Self.run(["fsck", base + "/storage", "--pattern", pattern], environment)
        #expect(checked.status == 0 && checked.output.hasSuffix(": clean.\n"), "\(checked)")
        #expect(checked.output.contains("14 items, 3 chunks, 5 pack members"), "\(checked)")
    }

    @Test func theCommandIsInTheHelpButNotInAReleaseOfIndexTwo() {
        let on = CLIRun(["help", "upgrade"])
        #expect(on.status == 0 && on.standardOutput.contains("USAGE: dotsafe upgrade"), "\(on)")
        #expect(on.standardOutput.contains("--yes"), "\(on)")
        #expect(CLIRun(["help"]).standardOutput.contains("upgrade"))
        let off = CLIRun(["help", "upgrade"], environment: ["DOTSAFE_INDEX_THREE": "0"])
        #expect(off.status != 0, "\(off)")
        #expect(!CLIRun(["help"], environment: ["DOTSAFE_INDEX_THREE": "0"]).standardOutput.contains("upgrade"))
    }
}
