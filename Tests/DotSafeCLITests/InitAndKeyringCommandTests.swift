import Foundation
import Testing
import VaultFormat

@Suite struct InitAndKeyringCommandTests {
    /// A fresh folder under the test run's TMPDIR, and an environment whose keyring lives in it.
    static func workspace() throws -> (path: String, environment: [String: String]) {
        let path = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/dotsafe-test-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return (path, ["HOME": path, "DOTSAFE_KEYRING": path + "/keyring", "DOTSAFE_ALLOW_WEAK_KDF": "1", "DOTSAFE_KDF_ROUNDS": "1000"])
    }

    @Test func initMakesAStorageAndAKeyring() throws {
        let (base, env) = try Self.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let run = CLIRun(["init", base + "/storage"], environment: env)
        #expect(run.status == 0, "\(run)")
        let files = try FileManager.default.contentsOfDirectory(atPath: base + "/storage")
        #expect((64...128).contains(files.count) && files.count % 16 == 0)
        #expect(files.allSatisfy { FileName.isWellFormed($0) })
        for name in files.prefix(5) {
            #expect((try FileManager.default.attributesOfItem(atPath: base + "/storage/" + name)[.size] as? Int) == Format.fileSize)
        }
        #expect(run.standardOutput.contains("Created storage \(base)/storage with \(files.count) cover files."))
        #expect(FileManager.default.fileExists(atPath: base + "/keyring"))
    }

    @Test func initRefusesAFolderThatIsNotEmptyAndChangesNothing() throws {
        let (base, env) = try Self.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createDirectory(atPath: base + "/full", withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: base + "/full/note.txt"))
        let run = CLIRun(["init", base + "/full"], environment: env)
        #expect(run.status == 1)
        #expect(run.standardError == "dotsafe: \(base)/full is not empty: a storage is made in a new or empty folder\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: base + "/full") == ["note.txt"])
        #expect(try String(contentsOfFile: base + "/full/note.txt", encoding: .utf8) == "mine")
        #expect(!FileManager.default.fileExists(atPath: base + "/keyring"))
    }

    @Test func initWithoutStorageIsAUsageError() {
        let run = CLIRun(["init"])
        #expect(run.status == 64)
        #expect(run.standardError.hasPrefix("dotsafe: missing argument STORAGE\n"))
    }

    @Test func exportAndImportCarryTheSalt() throws {
        let (base, env) = try Self.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect(CLIRun(["init", base + "/storage"], environment: env).status == 0)
        let export = CLIRun(["keyring", "export", base + "/salt.export", "--passphrase-stdin"], environment: env, input: ["a long passphrase"])
        #expect(export.status == 0, "\(export)")
        var other = env
        other["DOTSAFE_KEYRING"] = base + "/second/keyring"
        let wrong = CLIRun(["keyring", "import", base + "/salt.export", "--passphrase-stdin"], environment: other, input: ["not it"])
        #expect(wrong.status == 1)
        #expect(wrong.standardError == "dotsafe: the passphrase is wrong, or the export is damaged\n")
        #expect(!FileManager.default.fileExists(atPath: base + "/second/keyring"))
        let right = CLIRun(["keyring", "import", base + "/salt.export", "--passphrase-stdin"], environment: other, input: ["a long passphrase"])
        #expect(right.status == 0, "\(right)")
        #expect(FileManager.default.contents(atPath: base + "/keyring") == FileManager.default.contents(atPath: base + "/second/keyring"))
    }

    /// A file that is not an export, or an export cut short or of another version: one clean
    /// line each (these once read "the keyring the export is damaged: invalid not a ..."), and
    /// no keyring is made.
    @Test func importOfWhatIsNoReadableExportSaysWhy() throws {
        let (base, env) = try Self.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect(CLIRun(["init", base + "/storage"], environment: env).status == 0)
        #expect(CLIRun(["keyring", "export", base + "/salt.export", "--passphrase-stdin"], environment: env, input: ["a long passphrase"]).status == 0)
        let export = try #require(FileManager.default.contents(atPath: base + "/salt.export"))
        var other = env
        other["DOTSAFE_KEYRING"] = base + "/second/keyring"
        func changed(_ change: (inout Data) -> Void) -> Data { var bytes = export; change(&bytes); return bytes }
        let cases: [(Data, String)] = [
            (Data("not an export at all\n".utf8), "the file is not a DotSafe keyring export"),
            (Data(), "the file is not a DotSafe keyring export"),
            (export.prefix(50), "the file is damaged: truncated keyring export"),
            // Magic, version, rounds, salt and nonce, and a sealed part no longer than its tag.
            (export.prefix(8 + 1 + 4 + 32 + 24 + 16), "the file is damaged: truncated keyring export"),
            (changed { $0[8] = 0 }, "the file is damaged: invalid keyring export version 0"),
            (changed { $0[8] = 9 }, "the file was made by a newer DotSafe (format version 9); update DotSafe to open it"),
        ]
        for (bytes, message) in cases {
            try bytes.write(to: URL(fileURLWithPath: base + "/bad.export"))
            let run = CLIRun(["keyring", "import", base + "/bad.export", "--passphrase-stdin"], environment: other, input: ["a long passphrase"])
            #expect(run.status == 1 && run.standardError == "dotsafe: \(message)\n", "\(run)")
            #expect(!FileManager.default.fileExists(atPath: base + "/second/keyring"))
        }
    }

    @Test func exportRefusesShortPassphrasesAndDifferingConfirmation() throws {
        let (base, env) = try Self.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect(CLIRun(["init", base + "/storage"], environment: env).status == 0)
        let short = CLIRun(["keyring", "export", base + "/e", "--passphrase-stdin"], environment: env, input: ["short"])
        #expect(short.standardError == "dotsafe: the passphrase is too short: use at least 8 characters\n")
        let differ = CLIRun(["--keyring", base + "/keyring", "keyring", "export", base + "/e"],
                            environment: env, input: [])
        #expect(differ.standardError == "dotsafe: no terminal to ask for the passphrase: use --passphrase-stdin\n")
        #expect(!FileManager.default.fileExists(atPath: base + "/e"))
        let unknown = CLIRun(["keyring", "burn", base + "/e"], environment: env)
        #expect(unknown.status == 64)
        #expect(unknown.standardError.hasPrefix("dotsafe: unknown keyring action 'burn': use show, export, import or move\n"))
    }
}
