import Foundation
import DotSafeTestSupport
import Testing
import VaultCore
import VaultFormat
import VaultStore

/// `dotsafe sync STORAGE REMOTE` with a real rclone and a local-folder remote: one `synced:`
/// line, a new device brought up from an empty folder, and each refusal's one line with nothing
/// left behind.
@Suite struct SyncCommandTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    static func secrets(_ environment: [String: String]) throws -> VaultSecrets {
        let salt = try #require(try Keyring(option: nil, environment: environment).patternSalt())
        return try VaultSecrets(pattern: Pattern(parsing: pattern), salt: salt)
    }

    static func sync(_ storage: String, _ remote: String, _ environment: [String: String], device: String,
                     pattern: String = pattern) -> CLIRun {
        CLIRun(["sync", storage, remote, "--pattern", pattern, "--device", device], environment: environment)
    }

    @Test func aVaultGoesUpAndComesDownOnANewDevice() throws {
        let (base, environment) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect(CLIRun(["init", base + "/laptop"], environment: environment).status == 0)
        let vault = try Vault.open(storage: try Storage.open(at: base + "/laptop"), secrets: try Self.secrets(environment), options: .likeDotsafe())
        let id = try vault.create(.file, in: Vault.rootID, named: Array("hello.txt".utf8), mode: 0o644)
        try vault.write(id, offset: 0, bytes: Array("hello from the laptop".utf8))
        try vault.lock()

        let remote = base + "/remote"
        let up = Self.sync(base + "/laptop", remote, environment, device: "laptop")
        #expect(up.status == 0 && up.standardOutput.hasPrefix("synced: "), "\(up)")
        #expect(up.standardOutput.split(separator: "\n").count == 1)

        let down = Self.sync(base + "/desktop", remote, environment, device: "desktop")
        #expect(down.status == 0 && down.standardOutput.hasPrefix("synced: "), "\(down)")
        let copy = try Vault.open(storage: try Storage.open(at: base + "/desktop"), secrets: try Self.secrets(environment), options: .likeDotsafe())
        defer { try? copy.lock() }
        let file = try copy.lookup(Vault.rootID, Array("hello.txt".utf8))
        #expect(try copy.read(file, offset: 0, count: 100) == Array("hello from the laptop".utf8))

        let again = Self.sync(base + "/laptop", remote, environment, device: "laptop")
        #expect(again.status == 0, "\(again)")
    }

    /// FORMAT.md §13.12 with sync: the change says the remote keeps the old pattern until the
    /// next sync, which moves its record; a device still at the old pattern gets one line.
    @Test func aPatternChangeReachesTheRemoteAtTheNextSync() throws {
        let (base, environment) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let newPattern = "c3-d2-d3-e4-d4-c5-b4"
        #expect(CLIRun(["init", base + "/laptop"], environment: environment).status == 0)
        let vault = try Vault.open(storage: try Storage.open(at: base + "/laptop"), secrets: try Self.secrets(environment), options: .likeDotsafe())
        let id = try vault.create(.file, in: Vault.rootID, named: Array("hello.txt".utf8), mode: 0o644)
        try vault.write(id, offset: 0, bytes: Array("hello".utf8))
        try vault.lock()
        let remote = base + "/remote"
        #expect(Self.sync(base + "/laptop", remote, environment, device: "laptop").status == 0)
        #expect(Self.sync(base + "/desktop", remote, environment, device: "desktop").status == 0)
        // The desktop writes offline, under the old pattern.
        do {
            let desktop = try Vault.open(storage: try Storage.open(at: base + "/desktop"), secrets: try Self.secrets(environment), options: .likeDotsafe())
            let id = try desktop.create(.file, in: Vault.rootID, named: Array("offline.txt".utf8), mode: 0o644)
            try desktop.write(id, offset: 0, bytes: Array("written offline".utf8))
            try desktop.lock()
        }

        let changed = CLIRun(["repattern", base + "/laptop", "--pattern-stdin"], environment: environment, input: [Self.pattern, newPattern])
        #expect(changed.status == 0 && changed.standardError.isEmpty, "\(changed)")
        #expect(changed.standardOutput.hasSuffix("opens nothing.\nThe sync remote opens with the old pattern until the next 'dotsafe sync' "
                                                 + "of this storage, with the new one.\n"), "\(changed)")
        let moved = Self.sync(base + "/laptop", remote, environment, device: "laptop", pattern: newPattern)
        #expect(moved.status == 0 && moved.standardOutput.hasPrefix("synced: "), "\(moved)")

        let before = try FileManager.default.contentsOfDirectory(atPath: base + "/desktop").sorted()
        let old = Self.sync(base + "/desktop", remote, environment, device: "desktop")
        #expect(old.status == 1 && old.standardOutput.isEmpty, "\(old)")
        #expect(old.standardError == "dotsafe: the vault's pattern was changed on another device: nothing was changed; this storage still "
                + "opens with this pattern and keeps its changes since its last sync; to go on, sync with the new pattern: this storage "
                + "follows the change and sends its changes\n", "\(old)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: base + "/desktop").sorted() == before)
        let phone = Self.sync(base + "/phone", remote, environment, device: "phone", pattern: newPattern)
        #expect(phone.status == 0, "\(phone)")
        // A lock erases the secrets it opened with: each open gets its own.
        let salt = try #require(try Keyring(option: nil, environment: environment).patternSalt())
        func secrets() throws -> VaultSecrets { try VaultSecrets(pattern: Pattern(parsing: newPattern), salt: salt) }
        do {
            let copy = try Vault.open(storage: try Storage.open(at: base + "/phone"), secrets: secrets(), options: .likeDotsafe())
            defer { try? copy.lock() }
            #expect(try copy.read(try copy.lookup(Vault.rootID, Array("hello.txt".utf8)), offset: 0, count: 100) == Array("hello".utf8))
        }

        // The desktop syncs the new pattern into its own storage: it follows the change, and its
        // offline change goes up (FORMAT.md §13.12, "Another device follows the change").
        let followed = Self.sync(base + "/desktop", remote, environment, device: "desktop", pattern: newPattern)
        #expect(followed.status == 0 && followed.standardOutput.hasPrefix("synced: "), "\(followed)")
        #expect(Self.sync(base + "/phone", remote, environment, device: "phone", pattern: newPattern).status == 0)
        for device in ["desktop", "phone"] {
            let copy = try Vault.open(storage: try Storage.open(at: base + "/" + device), secrets: secrets(), options: .likeDotsafe())
            defer { try? copy.lock() }
            #expect(try copy.read(try copy.lookup(Vault.rootID, Array("offline.txt".utf8)), offset: 0, count: 100)
                    == Array("written offline".utf8), "\(device)")
        }
        let former = try Vault.open(storage: try Storage.open(at: base + "/desktop"), secrets: try Self.secrets(environment),
                                    options: .likeDotsafe(readOnly: true))
        defer { try? former.lock() }
        #expect(former.isNew, "the old pattern opens nothing in the desktop's storage")
    }

    /// Two lineages: a storage made apart (its own `init`, the same keyring and pattern, so a
    /// vault of its own that opens the remote's record) is refused by a sync against the remote
    /// of the other vault, with one line, and neither side changes; the other device goes on.
    @Test func aVaultMadeApartWithTheSamePatternIsRefusedAndNothingChanges() throws {
        let (base, environment) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let remote = base + "/remote"
        for (device, text) in [("laptop", "from the laptop"), ("desktop", "from the desktop")] {
            #expect(CLIRun(["init", base + "/" + device], environment: environment).status == 0)
            let vault = try Vault.open(storage: try Storage.open(at: base + "/" + device), secrets: try Self.secrets(environment), options: .likeDotsafe())
            let id = try vault.create(.file, in: Vault.rootID, named: Array("\(device).txt".utf8), mode: 0o644)
            try vault.write(id, offset: 0, bytes: Array(text.utf8))
            try vault.lock()
        }
        let up = Self.sync(base + "/laptop", remote, environment, device: "laptop")
        try #require(up.status == 0, "\(up)")

        let remoteBefore = KeyringCommandTests.snapshot(remote), desktopBefore = KeyringCommandTests.snapshot(base + "/desktop")
        let refused = Self.sync(base + "/desktop", remote, environment, device: "desktop")
        #expect(refused.status == 1 && refused.standardOutput.isEmpty, "\(refused)")
        #expect(refused.standardError == "dotsafe: the remote holds another vault made with this pattern (this storage's vault was "
                + "made apart from it): nothing was changed on either side; two vaults do not merge: copy its files into a storage that "
                + "synced with the remote\n",
                "\(refused)")
        #expect(KeyringCommandTests.snapshot(remote) == remoteBefore)
        #expect(KeyringCommandTests.snapshot(base + "/desktop") == desktopBefore)

        // Both vaults still open as they were; the laptop syncs on, and a new device gets its vault alone.
        do {
            let desktop = try Vault.open(storage: try Storage.open(at: base + "/desktop"), secrets: try Self.secrets(environment), options: .likeDotsafe())
            defer { try? desktop.lock() }
            #expect(try desktop.read(try desktop.lookup(Vault.rootID, Array("desktop.txt".utf8)), offset: 0, count: 100)
                    == Array("from the desktop".utf8))
            #expect(throws: (any Error).self) { try desktop.lookup(Vault.rootID, Array("laptop.txt".utf8)) }
        }
        #expect(Self.sync(base + "/laptop", remote, environment, device: "laptop").status == 0)
        let phone = Self.sync(base + "/phone", remote, environment, device: "phone")
        #expect(phone.status == 0, "\(phone)")
        let copy = try Vault.open(storage: try Storage.open(at: base + "/phone"), secrets: try Self.secrets(environment), options: .likeDotsafe())
        defer { try? copy.lock() }
        #expect(try copy.read(try copy.lookup(Vault.rootID, Array("laptop.txt".utf8)), offset: 0, count: 100) == Array("from the laptop".utf8))
        #expect(throws: (any Error).self) { try copy.lookup(Vault.rootID, Array("desktop.txt".utf8)) }
    }

    /// A remote folder's missing parents are made, as rclone makes them for any remote; a
    /// storage folder's are not (a mistyped path would leave folders behind): one line says
    /// so, for `sync` as for `init`, and nothing is changed on either side.
    @Test func aRemotesMissingParentsAreMadeAndAStoragesAreNot() throws {
        let (base, environment) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect(CLIRun(["init", base + "/laptop"], environment: environment).status == 0)
        let vault = try Vault.open(storage: try Storage.open(at: base + "/laptop"), secrets: try Self.secrets(environment), options: .likeDotsafe())
        try vault.write(try vault.create(.file, in: Vault.rootID, named: Array("a.txt".utf8), mode: 0o644), offset: 0, bytes: [1, 2, 3])
        try vault.lock()

        let remote = base + "/not/yet/remote"
        let up = Self.sync(base + "/laptop", remote, environment, device: "laptop")
        #expect(up.status == 0 && up.standardOutput.hasPrefix("synced: "), "\(up)")
        let uploaded = try FileManager.default.contentsOfDirectory(atPath: remote).sorted()
        #expect(!uploaded.isEmpty)

        let storage = base + "/typo/desktop"
        let down = Self.sync(storage, remote, environment, device: "desktop")
        #expect(down.status == 1 && down.standardOutput.isEmpty, "\(down)")
        #expect(down.standardError == "dotsafe: cannot make the storage folder \(storage): the folder it goes in does not exist "
                + "(a typo? make it first); nothing was changed\n", "\(down)")
        #expect(!FileManager.default.fileExists(atPath: base + "/typo"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: remote).sorted() == uploaded)

        let made = CLIRun(["init", storage], environment: environment)
        #expect(made.status == 1 && made.standardError == down.standardError, "\(made)")
        #expect(!FileManager.default.fileExists(atPath: base + "/typo"))
    }

    @Test func refusalsSayOneLineAndLeaveNothing() throws {
        let (base, environment) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect(CLIRun(["init", base + "/seed"], environment: environment).status == 0)

        let missing = CLIRun(["sync", base + "/seed"], environment: environment)
        #expect(missing.status == 64 && missing.standardError.hasPrefix("dotsafe: missing argument REMOTE"), "\(missing)")

        // No vault here or there: the folder the sync would have made a storage is not left.
        let nothing = Self.sync(base + "/new", base + "/remote", environment, device: "desk")
        #expect(nothing.status == 1, "\(nothing)")
        #expect(nothing.standardError.hasSuffix("\ndotsafe: no vault opens with this pattern, neither in the storage nor on the remote\n")
                || nothing.standardError == "dotsafe: no vault opens with this pattern, neither in the storage nor on the remote\n")
        #expect(!FileManager.default.fileExists(atPath: base + "/new"))

        let unknown = Self.sync(base + "/seed", ":nosuchbackend:vault", environment, device: "desk")
        #expect(unknown.status == 1 && unknown.standardError.hasPrefix("dotsafe: rclone cannot use the remote"), "\(unknown)")
        #expect(unknown.standardError.split(separator: "\n").filter { $0.hasPrefix("dotsafe: ") }.count == 1)

        let badDevice = CLIRun(["sync", base + "/seed", base + "/remote", "--pattern", Self.pattern, "--device", "a/b"],
                               environment: environment)
        #expect(badDevice.status == 64, "\(badDevice)")
    }
}
