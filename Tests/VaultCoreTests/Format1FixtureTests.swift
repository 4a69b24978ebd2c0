import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// A storage written by the format-1 release (Fixtures/format1.tar.gz, made at commit fd0c8da by
/// `DOTSAFE_WRITE_FIXTURE=1 tools/test --filter Format1Fixture`; see Fixtures/README.md). Later
/// releases must open it, read every file as written, and keep it working after a write (R-VLT:
/// storages written by any earlier release keep opening).
@Suite struct Format1FixtureTests {
    static let pattern = "a1-b2-c3-d4-e5-e4-d3"
    static let archive = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/format1.tar.gz").path
    static let clockStart: Int64 = 1_700_000_000_000_000_000

    /// What the fixture's vault holds: path, kind and expected content (files) or target (links).
    enum Entry: Equatable {
        case folder
        case file([UInt8], mode: UInt32)
        case link([UInt8])
    }

    static let hello = Array("Hello from format 1!\n".utf8)
    static var sparse: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 1 << 20)
        bytes.replaceSubrange(700_000..<700_010, with: TestVaults.content(10, seed: 5))
        return bytes
    }
    static var big: [UInt8] {
        var bytes = TestVaults.content(300_000, seed: 1)
        bytes.replaceSubrange(0..<1000, with: TestVaults.content(1000, seed: 2))  // the overwrite of commit 2
        return bytes
    }
    static var expected: [String: Entry] {
        [
            "docs": .folder,
            "docs/hello.txt": .file(hello, mode: 0o644),
            "docs/notes.md": .file(TestVaults.content(3000, seed: 3), mode: 0o644),
            "big.bin": .file(big, mode: 0o644),
            "sparse.bin": .file(sparse, mode: 0o644),
            "empty": .file([], mode: 0o644),
            "secret.key": .file(TestVaults.content(32, seed: 4), mode: 0o600),
            "deep": .folder, "deep/a": .folder, "deep/a/b": .folder,
            "deep/a/b/c.txt": .file(Array("deep\n".utf8), mode: 0o644),
            "ünïcødé 名前.txt": .file(Array("名前\n".utf8), mode: 0o644),
            "link": .link(Array("docs/hello.txt".utf8)),
        ]
    }
    static let extendedAttribute = (path: "docs/hello.txt", name: Array("user.colour".utf8), value: Array("blue".utf8))

    /// Unpacks the fixture into a fresh folder: the storage in `storage/`, the keyring file `keyring`.
    static func unpack() throws -> (folder: String, storage: DiskStorageFolder, secrets: () throws -> VaultSecrets) {
        let folder = try TestFolder.make("format1")
        let untar = CommandResult.run("/bin/tar", ["-xzf", archive, "-C", folder])
        guard untar.status == 0 else { throw HarnessError("tar: \(untar.error)") }
        let keyring = Keyring(backend: FileKeyringBackend(path: folder + "/keyring"), allowWeakKDF: true)
        let secrets = { try VaultSecrets(pattern: try Pattern(parsing: pattern), salt: try keyring.requiredPatternSalt()) }
        return (folder, try DiskStorageFolder(path: folder + "/storage"), secrets)
    }

    /// Every path of the vault with what it holds, walking from the root folder.
    static func contents(of vault: Vault) throws -> [String: Entry] {
        var found: [String: Entry] = [:]
        func walk(_ folder: UInt64, _ prefix: String) throws {
            for (name, id) in try vault.contents(ofFolder: folder) {
                let path = prefix + String(decoding: name, as: UTF8.self)
                let attributes = try vault.attributes(id)
                switch attributes.type {
                case .folder:
                    found[path] = .folder
                    try walk(id, path + "/")
                case .file:
                    found[path] = .file(try vault.read(id, offset: 0, count: Int(attributes.size)), mode: attributes.mode & 0o7777)
                case .symlink:
                    found[path] = .link(try vault.symlinkTarget(id))
                default:
                    throw HarnessError("unexpected item type at \(path)")
                }
            }
        }
        try walk(Vault.rootID, "")
        return found
    }

    static func id(_ path: String, in vault: Vault) throws -> UInt64 {
        try path.split(separator: "/").reduce(Vault.rootID) { try vault.lookup($0, Array($1.utf8)) }
    }

    @Test func theFormat1StorageOpensAndReadsEveryFile() throws {
        let fixture = try Self.unpack()
        defer { TestFolder.remove(fixture.folder) }
        let vault = try Vault.open(storage: fixture.storage, secrets: try fixture.secrets(), options: Vault.Options(readOnly: true))
        defer { try? vault.lock() }
        #expect(try Self.contents(of: vault) == Self.expected)
        let attribute = Self.extendedAttribute
        #expect(try vault.extendedAttribute(try Self.id(attribute.path, in: vault), attribute.name) == attribute.value)
        #expect(try vault.attributes(try Self.id("docs/hello.txt", in: vault)).mtime == Self.clockStart)
    }

    /// Opened for writing, the format-1 vault reads as before, and its first commit upgrades it
    /// to format 2 (docs/FORMAT.md §13.9) with the same number of storage files; afterwards it
    /// reads every file again, `fsck` reads its remaining format-1 chunks and members, and the
    /// pattern still names its files (RL = LOC, NKd = NK) until a pattern change.
    @Test func theFormat1VaultTakesWritesAndIsUpgraded() throws {
        let fixture = try Self.unpack()
        defer { TestFolder.remove(fixture.folder) }
        let added = TestVaults.content(400_000, seed: 9)
        let files = try fixture.storage.listFiles().count
        do {
            let vault = try Vault.open(storage: fixture.storage, secrets: try fixture.secrets())
            #expect(vault.formatVersion == 1)
            #expect(try Self.contents(of: vault) == Self.expected)
            try vault.write(try Self.id("docs/hello.txt", in: vault), offset: 0, bytes: Array("HELLO".utf8))
            try vault.remove(Array("empty".utf8), from: Vault.rootID)
            try vault.commit()
            #expect(vault.formatVersion == 2)
            #expect(try fixture.storage.listFiles().count == files, "the upgrade keeps the count of storage files")
            try vault.makeFile("added.bin", added)
            try vault.lock()
        }
        var expected = Self.expected
        expected["added.bin"] = .file(added, mode: 0o644)
        expected["docs/hello.txt"] = .file(Array("HELLO".utf8) + Self.hello.dropFirst(5), mode: 0o644)
        expected["empty"] = nil
        let again = try Vault.open(storage: fixture.storage, secrets: try fixture.secrets(), options: Vault.Options(readOnly: true))
        defer { try? again.lock() }
        #expect(again.formatVersion == 2 && again.rollbackWarning == nil)
        let derived = again.namesArePatternDerived
        #expect(derived.rootLocator && derived.namesKey)
        #expect(try Self.contents(of: again) == expected)
        let attribute = Self.extendedAttribute
        #expect(try again.extendedAttribute(try Self.id(attribute.path, in: again), attribute.name) == attribute.value)
        let report = try again.check()
        #expect(report.isClean, "\(report.storageProblems)")
        // big.bin's two chunks and sparse.bin's one (format-1 seals, scheme 1), added.bin's two.
        #expect(report.chunksChecked == 5)
    }

    /// Writes the fixture: only meaningful with a format-1 writer (commit fd0c8da). Large random
    /// draws (file fills, covers, pack images) are zeros so that the archive stays small; keys,
    /// nonces and names are random as always.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["DOTSAFE_WRITE_FIXTURE"] == "1"))
    func writeTheFixture() throws {
        guard !FileManager.default.fileExists(atPath: Self.archive) else {
            Issue.record("the fixture exists; it is never rewritten (Fixtures/README.md)")
            return
        }
        let folder = try TestFolder.make("format1-write")
        defer { TestFolder.remove(folder) }
        try FileManager.default.createDirectory(atPath: folder + "/storage", withIntermediateDirectories: false)
        let storage = try DiskStorageFolder(path: folder + "/storage")
        let random = SmallDrawsOnlyRandom()
        try Storage.addCovers(to: storage, random: random)
        let keyring = Keyring(backend: FileKeyringBackend(path: folder + "/keyring"), random: random, allowWeakKDF: true)
        let salt = try keyring.createPatternSalt(rounds: 1000)
        let secrets = try VaultSecrets(pattern: try Pattern(parsing: Self.pattern), salt: salt)
        let vault = try Vault.open(storage: storage, secrets: secrets, random: random, clock: ManualClock(Self.clockStart))

        let docs = try vault.create(.folder, in: Vault.rootID, named: Array("docs".utf8), mode: 0o755)
        let hello = try vault.makeFile("hello.txt", Self.hello, in: docs)
        try vault.setExtendedAttribute(hello, Self.extendedAttribute.name, Self.extendedAttribute.value)
        try vault.makeFile("notes.md", TestVaults.content(3000, seed: 3), in: docs)
        let big = try vault.makeFile("big.bin", TestVaults.content(300_000, seed: 1))
        let sparse = try vault.makeFile("sparse.bin", [])
        try vault.truncate(sparse, size: 1 << 20)
        try vault.write(sparse, offset: 700_000, bytes: TestVaults.content(10, seed: 5))
        try vault.makeFile("empty", [])
        let key = try vault.makeFile("secret.key", TestVaults.content(32, seed: 4))
        try vault.setAttributes(key, mode: 0o600)
        var parent = Vault.rootID
        for name in ["deep", "a", "b"] { parent = try vault.create(.folder, in: parent, named: Array(name.utf8), mode: 0o755) }
        try vault.makeFile("c.txt", Array("deep\n".utf8), in: parent)
        try vault.makeFile("ünïcødé 名前.txt", Array("名前\n".utf8))
        try vault.create(.symlink, in: Vault.rootID, named: Array("link".utf8), mode: 0o777, target: Array("docs/hello.txt".utf8))
        try vault.makeFile("temporary.txt", Array("gone\n".utf8))
        try vault.commit()
        try vault.write(big, offset: 0, bytes: TestVaults.content(1000, seed: 2))
        try vault.commit()
        try vault.remove(Array("temporary.txt".utf8), from: Vault.rootID)
        try vault.lock()

        let check = try Vault.open(storage: storage, secrets: try VaultSecrets(pattern: try Pattern(parsing: Self.pattern), salt: salt),
                                   options: Vault.Options(readOnly: true))
        #expect(try Self.contents(of: check) == Self.expected)
        try check.lock()
        try FileManager.default.createDirectory(atPath: URL(fileURLWithPath: Self.archive).deletingLastPathComponent().path,
                                                withIntermediateDirectories: true)
        let tar = CommandResult.run("/bin/tar", ["--sort=name", "--owner=0", "--group=0", "--mtime=@1700000000",
                                                 "-czf", Self.archive, "-C", folder, "storage", "keyring"])
        #expect(tar.status == 0, "\(tar.error)")
    }
}

/// Real random bytes for draws under 4 KiB (keys, nonces, names, counts); zeros for larger ones
/// (covers and file fills), which the format only requires to look random to an observer.
private struct SmallDrawsOnlyRandom: RandomSource {
    func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        if buffer.count < 4096 { try SystemRandom().fill(buffer) } else { buffer.initializeMemory(as: UInt8.self, repeating: 0) }
    }
}
