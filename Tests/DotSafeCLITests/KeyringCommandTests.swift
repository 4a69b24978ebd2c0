import Foundation
import Testing
import VaultCore
import VaultFormat
import VaultStore

/// `init --kdf`, init on an existing storage, `keyring show`, recovery codes, `keyring move`
/// between files, a missing keyring, and the Secret Service without a bus (issue 15). The
/// Secret Service itself is tested against a real GNOME Keyring in DotSafeMountTests.
@Suite struct KeyringCommandTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    /// Names and bytes of every file under `path`, to show that a refused command changed nothing.
    static func snapshot(_ path: String) -> [String: Data] {
        var files: [String: Data] = [:]
        for name in (try? FileManager.default.subpathsOfDirectory(atPath: path)) ?? [] {
            files[name] = FileManager.default.contents(atPath: path + "/" + name) ?? Data()
        }
        return files
    }

    @Test func initWithScryptRecordsItAndShowSaysSo() throws {
        let (base, env) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        var scryptEnv = env
        scryptEnv["DOTSAFE_SCRYPT_N"] = "1024"
        #expect(CLIRun(["init", base + "/storage", "--kdf", "scrypt"], environment: scryptEnv).status == 0)
        let show = CLIRun(["keyring"], environment: env)
        #expect(show.standardOutput == "The keyring is the file \(base)/keyring.\nPattern salt: scrypt, N 1024, r 8, p 1 (1 MiB).\n", "\(show)")
        #expect(CLIRun(["keyring", "show"], environment: env) == show)
        // No vault yet; then one written under the keys the recorded KDF gives: fsck opens it
        // (a command that derived with PBKDF2 from this salt would find nothing).
        #expect(CLIRun(["fsck", base + "/storage", "--pattern", Self.pattern], environment: env).standardError
                == "dotsafe: no vault opens with this pattern in \(base)/storage: nothing is at its index names\n")
        let salt = try #require(try Keyring(option: nil, environment: env).patternSalt())
        guard case .scrypt = salt.kdf else { Issue.record("not scrypt: \(salt.kdf)"); return }
        let vault = try Vault.open(storage: try Storage.open(at: base + "/storage"),
                                   secrets: try VaultSecrets(pattern: Pattern(parsing: Self.pattern), salt: salt))
        let file = try vault.create(.file, in: Vault.rootID, named: Array("a".utf8), mode: 0o644)
        try vault.write(file, offset: 0, bytes: Array("scrypt".utf8))
        try vault.lock()
        let fsck = CLIRun(["fsck", base + "/storage", "--pattern", Self.pattern], environment: env)
        #expect(fsck.status == 0 && fsck.standardOutput.hasPrefix("Checked ") && fsck.standardOutput.hasSuffix(": clean.\n"), "\(fsck)")
        // Without DOTSAFE_ALLOW_WEAK_KDF the same keyring is refused like weak PBKDF2 rounds.
        var strict = env
        strict["DOTSAFE_ALLOW_WEAK_KDF"] = nil
        #expect(CLIRun(["keyring"], environment: strict).standardError
                == "dotsafe: the keyring asks for scrypt, N 1024, r 8, p 1 (1 MiB), less than 64 MiB: refused (a planted keyring could weaken your vault)\n")
    }

    @Test func kdfIsForANewKeyringOnly() throws {
        let (base, env) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect(CLIRun(["init", base + "/one"], environment: env).status == 0)
        let before = Self.snapshot(base)
        let again = CLIRun(["init", base + "/two", "--kdf", "scrypt"], environment: env)
        #expect(again.status == 1)
        #expect(again.standardError == "dotsafe: the keyring \(base)/keyring exists already (PBKDF2-HMAC-SHA256, 1000 rounds): --kdf scrypt applies only to a new keyring; nothing was changed\n")
        let bogus = CLIRun(["init", base + "/two", "--kdf", "argon2"], environment: env)
        #expect(bogus.status == 64 && bogus.standardError.hasPrefix("dotsafe: unknown --kdf 'argon2': use pbkdf2 or scrypt\n"))
        #expect(Self.snapshot(base) == before)
    }

    @Test func initRefusesAnExistingStorageAndChangesNothing() throws {
        let (base, env) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let storage = base + "/storage"
        #expect(CLIRun(["init", storage], environment: env).status == 0)
        let before = Self.snapshot(base)
        let withKeyring = CLIRun(["init", storage], environment: env)
        #expect(withKeyring.status == 1)
        #expect(withKeyring.standardError == "dotsafe: \(storage) is a storage already: mount it with 'dotsafe mount \(storage) MOUNTPOINT' (init makes new storages only)\n")
        #expect(Self.snapshot(base) == before)
        // The keyring lost: init must not make a new one that opens none of these vaults.
        try FileManager.default.removeItem(atPath: base + "/keyring")
        let lost = Self.snapshot(base)
        let withoutKeyring = CLIRun(["init", storage], environment: env)
        #expect(withoutKeyring.status == 1)
        #expect(withoutKeyring.standardError == "dotsafe: \(storage) is a storage already, and its vaults need the keyring they were made with: import your backup with 'dotsafe keyring import FILE' or 'dotsafe keyring import --text' (init makes new storages only)\n")
        #expect(Self.snapshot(base) == lost)
    }

    @Test func aMissingKeyringIsNamedForWhatItIs() throws {
        let (base, env) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let storage = base + "/storage"
        #expect(CLIRun(["init", storage], environment: env).status == 0)
        try FileManager.default.removeItem(atPath: base + "/keyring")
        try FileManager.default.createDirectory(atPath: base + "/mnt", withIntermediateDirectories: true)
        let before = Self.snapshot(base)
        let expected = "dotsafe: the keyring is missing (\(base)/keyring): the vaults in this storage need the salt they were made with; import your backup with 'dotsafe keyring import FILE' or 'dotsafe keyring import --text' ('dotsafe init' would make a new keyring that opens none of them)\n"
        let fsck = CLIRun(["fsck", storage, "--pattern", Self.pattern], environment: env)
        #expect(fsck.status == 1 && fsck.standardError == expected, "\(fsck)")
        let mount = CLIRun(["mount", storage, base + "/mnt", "--pattern", Self.pattern], environment: env)
        #expect(mount.status == 1 && mount.standardError == expected, "\(mount)")
        let show = CLIRun(["keyring"], environment: env)
        #expect(show.standardError == "dotsafe: no keyring at \(base)/keyring (make one with 'dotsafe init STORAGE', or import one with 'dotsafe keyring import')\n")
        #expect(Self.snapshot(base) == before)
    }

    @Test func recoveryCodeGoesToPaperAndBack() throws {
        let (base, env) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect(CLIRun(["init", base + "/storage"], environment: env).status == 0)
        let export = CLIRun(["keyring", "export", "--text"], environment: env)
        #expect(export.status == 0)
        let rows = export.standardOutput.split(separator: "\n").map(String.init)
        #expect(rows.count == 4 && rows.prefix(3).allSatisfy { $0.split(separator: " ").count == 5 })
        #expect(export.standardError.contains("It holds the salt only: on its own it opens nothing"))
        // Typed back from standard input, as a person would (upper case too).
        var second = env
        second["DOTSAFE_KEYRING"] = base + "/second"
        let typed = CLIRun(["keyring", "import", "--text"], environment: second, input: rows.map { $0.uppercased() } + [""])
        #expect(typed.status == 0, "\(typed)")
        #expect(typed.standardOutput == "Imported the pattern salt into \(base)/second.\n")
        #expect(try Data(contentsOf: URL(fileURLWithPath: base + "/keyring")) == Data(contentsOf: URL(fileURLWithPath: base + "/second")))
        // From a file; the same salt again changes nothing.
        try export.standardOutput.write(toFile: base + "/code.txt", atomically: true, encoding: .utf8)
        #expect(CLIRun(["keyring", "import", "--text", base + "/code.txt"], environment: second).standardOutput
                == "The keyring \(base)/second already holds this salt.\n")
    }

    @Test func aTypoInARecoveryCodeNamesTheGroupAndWritesNothing() throws {
        let (base, env) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect(CLIRun(["init", base + "/storage"], environment: env).status == 0)
        var rows = CLIRun(["keyring", "export", "--text"], environment: env).standardOutput.split(separator: "\n").map(String.init)
        // Group 7 is the second group of the second row: change its check character.
        var groups = rows[1].split(separator: " ").map(String.init)
        groups[1] = String(groups[1].dropLast()) + (groups[1].last == "a" ? "b" : "a")
        rows[1] = groups.joined(separator: " ")
        var second = env
        second["DOTSAFE_KEYRING"] = base + "/second"
        let typo = CLIRun(["keyring", "import", "--text"], environment: second, input: rows)
        #expect(typo.status == 1)
        #expect(typo.standardError == "dotsafe: group 7 has a typo (its check character does not match): compare it with your paper\n")
        let short = CLIRun(["keyring", "import", "--text"], environment: second, input: Array(rows.prefix(3)))
        #expect(short.standardError == "dotsafe: a recovery code has 17 groups of 5 characters (85); this has 75\n")
        let none = CLIRun(["keyring", "import", "--text"], environment: second, input: [])
        #expect(none.standardError == "dotsafe: no recovery code given\n")
        #expect(!FileManager.default.fileExists(atPath: base + "/second"))
        let usage = CLIRun(["keyring", "move", "x", "--text"], environment: env)
        #expect(usage.status == 64 && usage.standardError.hasPrefix("dotsafe: --text goes with export or import\n"))
    }

    @Test func moveBetweenFiles() throws {
        let (base, env) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect(CLIRun(["init", base + "/storage"], environment: env).status == 0)
        let original = try Data(contentsOf: URL(fileURLWithPath: base + "/keyring"))
        let same = CLIRun(["keyring", "move", base + "/keyring"], environment: env)
        #expect(same.standardError == "dotsafe: the keyring is \(base)/keyring already: nothing was changed\n")
        let move = CLIRun(["keyring", "move", base + "/moved/keyring"], environment: env)
        #expect(move.status == 0, "\(move)")
        #expect(move.standardOutput == "Moved the keyring to \(base)/moved/keyring.\nCommands find it with --keyring \(base)/moved/keyring or DOTSAFE_KEYRING=\(base)/moved/keyring.\n")
        #expect(!FileManager.default.fileExists(atPath: base + "/keyring"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: base + "/moved/keyring")) == original)
    }

    @Test func theSecretServiceWithoutABusIsOneLineAndChangesNothing() throws {
        let (base, env) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        var noBus = env
        noBus["DBUS_SESSION_BUS_ADDRESS"] = nil
        let start = Date()
        let run = CLIRun(["--keyring", "secret-service", "init", base + "/storage"], environment: noBus)
        #expect(Date().timeIntervalSince(start) < 1)
        #expect(run.status == 1)
        #expect(run.standardError == "dotsafe: cannot reach the Secret Service: there is no session bus here (DBUS_SESSION_BUS_ADDRESS is not set); DotSafe does not fall back to another keyring\n")
        #expect(Self.snapshot(base).isEmpty)
        // Moving a file keyring there without a bus: the same line, the file kept.
        #expect(CLIRun(["init", base + "/storage"], environment: env).status == 0)
        let move = CLIRun(["keyring", "move", "secret-service"], environment: noBus)
        #expect(move.standardError == run.standardError)
        #expect(FileManager.default.fileExists(atPath: base + "/keyring"))
        // A record that points at the Secret Service (what `--keyring secret-service init` left)
        // is followed, never read as "no keyring" nor replaced by a file: mount and fsck over SSH
        // say the one line within a second, and nothing changes.
        try FileKeyringBackend(path: base + "/keyring").save([KeyringRecord.item(backend: KeyringRecord.secretService)])
        try FileManager.default.createDirectory(atPath: base + "/mnt", withIntermediateDirectories: true)
        let recorded = Self.snapshot(base)
        for command in [["mount", base + "/storage", base + "/mnt", "--pattern", Self.pattern], ["fsck", base + "/storage", "--pattern", Self.pattern]] {
            let begun = Date()
            let result = CLIRun(command, environment: noBus)
            #expect(Date().timeIntervalSince(begun) < 1, "\(command[0])")
            #expect(result.status == 1 && result.standardError == run.standardError, "\(command[0]): \(result)")
        }
        #expect(Self.snapshot(base) == recorded)
    }
}
