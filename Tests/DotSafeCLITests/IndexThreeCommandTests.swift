import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultStore

/// `sync` and `repattern` of index 3 (docs/FORMAT.md §15.1), run as the built executable on real
/// storages and a folder remote that rclone writes: a vault of index 3 syncs (up, down to a new
/// device, back) and changes its pattern; a release of index 2 (the tests' switch
/// `DOTSAFE_INDEX_THREE=0`) refuses it in each command as made by a newer DotSafe, in one line,
/// and writes nothing in the storage or on the remote.
@Suite struct IndexThreeCommandTests {
    typealias Upgrade = UpgradeCommandTests
    static let pattern = FsckCommandTests.pattern
    static let newer = "dotsafe: the vault was made by a newer DotSafe (format version 3); update DotSafe to open it"

    /// An index-2 fixture converted to index 3 by `dotsafe upgrade --yes`.
    static func converted() throws -> FsckCommandTests.Fixture {
        let fixture = try FsckCommandTests.fixture()
        let run = Upgrade.upgrade(fixture, ["--yes"])
        try #require(run.status == 0, "\(run)")
        return fixture
    }

    static func sync(_ storage: String, _ remote: String, _ fixture: FsckCommandTests.Fixture, device: String, switchOn: Bool,
                     pattern: String = pattern) -> CommandResult {
        Upgrade.run(["sync", storage, remote, "--pattern", pattern, "--device", device], fixture.environment, switchOn: switchOn)
    }

    /// Every file of `folder` by name with its SHA-256; empty for a folder that does not exist.
    static func hashes(_ folder: String) throws -> [String: [UInt8]] {
        guard FileManager.default.fileExists(atPath: folder) else { return [:] }
        var result: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            result[name] = SHA256.hash(Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))))
        }
        return result
    }

    /// The index version and the files of the vault `pattern` opens in `storage`, read with index 3.
    static func look(_ storage: String, _ fixture: FsckCommandTests.Fixture, pattern: String = pattern) throws
        -> (version: Int, contents: [String: [UInt8]]) {
        let salt = try #require(try Keyring(option: nil, environment: fixture.environment).patternSalt())
        var options = Vault.Options(readOnly: true, cacheBytes: 8 << 20)
        options.indexThree = true
        let vault = try Vault.open(storage: try Storage.open(at: storage), secrets: try VaultSecrets(pattern: Pattern(parsing: pattern), salt: salt),
                                   options: options)
        defer { try? vault.lock() }
        var contents: [String: [UInt8]] = [:]
        func walk(_ folder: UInt64, _ prefix: String) throws {
            for (name, id) in try vault.contents(ofFolder: folder) {
                let path = prefix + String(decoding: name, as: UTF8.self)
                if try vault.attributes(id).type == .folder { try walk(id, path + "/"); continue }
                contents[path] = try vault.read(id, offset: 0, count: Int(try vault.attributes(id).size))
            }
        }
        try walk(Vault.rootID, "")
        return (vault.indexVersion, contents)
    }

    static func fsckClean(_ storage: String, _ fixture: FsckCommandTests.Fixture, pattern: String = pattern) -> Bool {
        let run = Upgrade.run(["fsck", storage, "--pattern", pattern], fixture.environment)
        return run.status == 0 && run.output.hasSuffix(": clean.\n")
    }

    @Test func anIndexThreeVaultSyncsWithTheSwitchAndIsRefusedWithoutIt() throws {
        let fixture = try Self.converted()
        defer { try? FileManager.default.removeItem(atPath: fixture.base) }
        let laptop = fixture.storage, desktop = fixture.base + "/desktop", remote = fixture.base + "/remote"

        let storageBefore = try Self.hashes(laptop)
        let refused = Self.sync(laptop, remote, fixture, device: "laptop", switchOn: false)
        #expect(refused.status == 1 && Upgrade.errors(refused) == [Self.newer] && refused.output.isEmpty, "\(refused)")
        #expect(try Self.hashes(laptop) == storageBefore, "nothing written in the storage")
        #expect(!FileManager.default.fileExists(atPath: remote), "no remote made")

        let up = Self.sync(laptop, remote, fixture, device: "laptop", switchOn: true)
        #expect(up.status == 0 && up.output.hasPrefix("synced: ") && Upgrade.errors(up).isEmpty, "\(up)")
        let (storageAfter, remoteAfter) = (try Self.hashes(laptop), try Self.hashes(remote))
        for (storage, context) in [(laptop, "the storage"), (desktop, "a new device")] {
            let again = Self.sync(storage, remote, fixture, device: "other", switchOn: false)
            #expect(again.status == 1 && Upgrade.errors(again) == [Self.newer], "\(context): \(again)")
            #expect(try Self.hashes(laptop) == storageAfter && Self.hashes(remote) == remoteAfter, "\(context): nothing written")
        }
        #expect(!FileManager.default.fileExists(atPath: desktop), "the refused new device's folder is gone again")

        let down = Self.sync(desktop, remote, fixture, device: "desktop", switchOn: true)
        #expect(down.status == 0 && down.output.hasPrefix("synced: "), "\(down)")
        let joined = try Self.look(desktop, fixture)
        #expect(joined.version == 3 && joined.contents == fixture.contents)

        // A change on the new device reaches the first through the remote, index 3 on both.
        var options = Vault.Options(cacheBytes: 8 << 20)
        options.indexThree = true
        let vault = try Vault.open(storage: try Storage.open(at: desktop), secrets: try fixture.secrets(), options: options)
        let id = try vault.create(.file, in: Vault.rootID, named: Array("from-desktop.txt".utf8), mode: 0o644)
        try vault.write(id, offset: 0, bytes: Array("written on the desktop".utf8))
        try vault.lock()
        #expect(Self.sync(desktop, remote, fixture, device: "desktop", switchOn: true).status == 0)
        #expect(Self.sync(laptop, remote, fixture, device: "laptop", switchOn: true).status == 0)
        var expected = fixture.contents
        expected["from-desktop.txt"] = Array("written on the desktop".utf8)
        for storage in [laptop, desktop] {
            let found = try Self.look(storage, fixture)
            #expect(found.version == 3 && found.contents == expected, "\(storage)")
            #expect(Self.fsckClean(storage, fixture), "\(storage)")
        }
    }

    @Test func anIndexThreeVaultChangesItsPatternWithTheSwitchAndIsRefusedWithoutIt() throws {
        let fixture = try Self.converted()
        defer { try? FileManager.default.removeItem(atPath: fixture.base) }
        let newPattern = "c3-d2-d3-e4-d4-c5-b4"
        let input = Self.pattern + "\n" + newPattern + "\n"
        let before = try Self.hashes(fixture.storage)
        let refused = Upgrade.run(["repattern", fixture.storage, "--pattern-stdin"], fixture.environment, input: input, switchOn: false)
        #expect(refused.status == 1 && Upgrade.errors(refused) == [Self.newer], "\(refused)")
        #expect(try Self.hashes(fixture.storage) == before, "nothing written")

        let changed = Upgrade.run(["repattern", fixture.storage, "--pattern-stdin"], fixture.environment, input: input, switchOn: true)
        #expect(changed.status == 0 && Upgrade.errors(changed).isEmpty, "\(changed)")
        #expect(changed.output.hasSuffix("the new pattern opens it, the old one opens nothing.\n"), "\(changed)")
        let found = try Self.look(fixture.storage, fixture, pattern: newPattern)
        #expect(found.version == 3 && found.contents == fixture.contents)
        #expect(try Self.look(fixture.storage, fixture).contents.isEmpty, "the old pattern opens nothing")
        #expect(Self.fsckClean(fixture.storage, fixture, pattern: newPattern))
    }
}
