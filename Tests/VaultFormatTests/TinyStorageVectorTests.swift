import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// docs/FORMAT.md §10 `tiny-storage.txt`: a whole storage made from one deterministic random
/// stream and a still clock, listed as file names and SHA-256 of contents. A regression vector of
/// this implementation: the test makes the storage again and compares the listing byte for byte.
/// `DOTSAFE_WRITE_VECTORS=1 swift test --filter TinyStorage` rewrites the files after a deliberate
/// change of the format or of the engine's order of random draws. `tiny-storage.txt` is index
/// version 3 (§15); the vectors of earlier releases stay, checked as they were written: format 1
/// (`tiny-storage-format1.txt`, the file's content before index 3) and index 2
/// (`tiny-storage-index2.txt`, what releases before index 3 write), and each storage converts.
@Suite struct TinyStorageVectorTests {
    static let seed = [UInt8](repeating: 0x7e, count: 32)
    static let clockStart: Int64 = 1_700_000_000_000_000_000
    static let helloText = "Hello, DotSafe!\n"

    /// What the vault of each vector is written as.
    enum Kind: String, CaseIterable, Sendable {
        case formatOne, indexTwo, indexThree

        var fileName: String {
            switch self {
            case .formatOne: "tiny-storage-format1.txt"
            case .indexTwo: "tiny-storage-index2.txt"
            case .indexThree: "tiny-storage.txt"
            }
        }

        var options: Vault.Options {
            var options = Vault.Options()
            options.newVaultFormat = self == .formatOne ? .one : .two
            options.indexThree = self == .indexThree
            return options
        }
    }

    /// The pattern's secrets of keys.txt record 0 (pattern, salt, rounds), and those values.
    static func keys() throws -> (secrets: () throws -> VaultSecrets, pattern: String, salt: [UInt8], rounds: Int) {
        let keys = try #require(try VectorFile.load("keys.txt", in: .module).first)
        let patternText = try keys.string("PATTERN"), salt = try keys.hex("SALT"), rounds = try keys.int("ROUNDS")
        return ({ try VaultSecrets(pattern: try Pattern(parsing: patternText), salt: salt, rounds: rounds) }, patternText, salt, rounds)
    }

    /// The vector's storage, made again in memory, and its cover count.
    static func make(_ kind: Kind) throws -> (storage: SimulatedStorageFolder, covers: Int) {
        let random = DeterministicRandom(seed: seed)
        let clock = ManualClock(clockStart)
        let storage = SimulatedStorageFolder()
        let covers = try Storage.addCovers(to: storage, random: random)
        let vault = try Vault.open(storage: storage, secrets: try keys().secrets(), options: kind.options, random: random, clock: clock)
        let id = try vault.create(.file, in: Vault.rootID, named: Array("hello.txt".utf8), mode: 0o644)
        try vault.write(id, offset: 0, bytes: Array(helloText.utf8))
        try vault.commit()
        try vault.lock()
        return (storage, covers)
    }

    /// The header that says how the vector was made: format 1's as it was first written.
    static func header(_ kind: Kind) -> [String] {
        let made: [String]
        switch kind {
        case .formatOne:
            made = [
                "# Made in memory (SimulatedStorageFolder) with ONE deterministic random stream (§10.1) for every",
                "# draw, and a clock that stands still:",
                "#   1. Storage.addCovers: uniform(64) (8-byte draws, §3.2), then per cover base32(random(16)) and random(F);",
                "#   2. Vault.open with the secrets of keys.txt record 0 (pattern, salt, rounds below): a new vault draws",
                "#      its vault key (32), its cover count (uniform(5), 2 + draw);",
                "#   3. create hello.txt (mode 0644, uid 0, gid 0; item key: 32 bytes), write its content;",
                "#   4. commit: the member seal (nonce 24), the new pack's random image (F), the index page (padding, nonce),",
                "#      every unwritten file of group 0 (random(F) each, in number order), the root (padding, nonce),",
                "#      the other slot (random(F));",
                "#   5. lock: the covers get random(F) each (R-COV-3).",
            ]
        case .indexTwo:
            made = [
                "# Made in memory (SimulatedStorageFolder) with ONE deterministic random stream (§10.1) for every",
                "# draw, and a clock that stands still, by the steps of tiny-storage-format1.txt (covers, open, create",
                "# hello.txt, commit, lock); the vault is format 2 (§13) with index version 2, as releases before",
                "# index 3 write it. The draws are the engine's own order (unlock record, device entry, keys, seals, fills).",
            ]
        case .indexThree:
            made = [
                "# Made in memory (SimulatedStorageFolder) with ONE deterministic random stream (§10.1) for every",
                "# draw, and a clock that stands still, by the steps of tiny-storage-format1.txt (covers, open, create",
                "# hello.txt, commit, lock); the vault is format 2 (§13) with index version 3 (§15). The draws are the",
                "# engine's own order (unlock record, device entry, keys, the entry hash key, seals, fills).",
            ]
        }
        return [
            "# A whole storage (docs/FORMAT.md §10): a regression vector of DotSafe's Swift implementation,",
            "# written by Tests/VaultFormatTests/TinyStorageVectorTests.swift (DOTSAFE_WRITE_VECTORS=1).",
            "#",
        ] + made + [
            "# Any change to the format, the records, the draw order or the times changes this file.",
            "#",
            "# SEED: the stream's seed. CLOCK: nanoseconds since the Unix epoch for every time.",
            "# Then one line per file, sorted by name: name, SHA-256 of its F bytes.",
            "",
        ]
    }

    /// The listing, with the header that says how it was made.
    static func listing(_ kind: Kind) throws -> String {
        let (storage, covers) = try make(kind)
        let keys = try Self.keys()
        let files = storage.snapshot.sorted { $0.key < $1.key }
        var lines = header(kind) + [
            "SEED = \(seed.hex)",
            "PATTERN = \(keys.pattern)",
            "SALT = \(keys.salt.hex)",
            "ROUNDS = \(keys.rounds)",
            "CLOCK = \(clockStart)",
            "CONTENT = \(Array(helloText.utf8).hex)",
            "COVERS = \(covers)",
            "FILES = \(files.count)",
            "",
        ]
        lines += files.map { "\($0.key) \(sha256($0.value).hex)" }
        return lines.joined(separator: "\n") + "\n"
    }

    @Test(arguments: Kind.allCases)
    func storageIsReproducedByteForByte(_ kind: Kind) throws {
        let made = try Self.listing(kind)
        // An earlier release's vector is written once, never again: it records what that release wrote.
        let path = VectorFile.sourcePath(kind.fileName)
        if ProcessInfo.processInfo.environment["DOTSAFE_WRITE_VECTORS"] == "1" && (kind == .indexThree || !FileManager.default.fileExists(atPath: path)) {
            try made.write(toFile: path, atomically: true, encoding: .utf8)
        }
        let committed = try VectorFile.text(kind.fileName, in: .module)
        #expect(made == committed, "the storage differs from Vectors/\(kind.fileName); see the test's comment")
    }

    /// Each vector's storage (an earlier release's bytes, as its listing shows) opens with index
    /// 3 on, reads hello.txt, and converts by one commit (FORMAT.md §15.1) with the same tree;
    /// the check finds nothing, and the storage keeps its file count.
    @Test(arguments: Kind.allCases)
    func theVectorStorageConverts(_ kind: Kind) throws {
        let storage = try Self.make(kind).storage
        let files = storage.snapshot.count
        var options = Vault.Options()
        options.indexThree = true
        let vault = try Vault.open(storage: storage, secrets: try Self.keys().secrets(), options: options, clock: ManualClock(Self.clockStart))
        #expect(vault.indexVersion == [.formatOne: 1, .indexTwo: 2, .indexThree: 3][kind])
        #expect(try vault.convertToIndexThree() == (kind != .indexThree))
        try vault.lock()
        options.readOnly = true
        let again = try Vault.open(storage: storage, secrets: try Self.keys().secrets(), options: options)
        defer { try? again.lock() }
        #expect(again.indexVersion == 3 && storage.snapshot.count == files)
        #expect(try again.contents(ofFolder: Vault.rootID).map { String(decoding: $0.name, as: UTF8.self) } == ["hello.txt"])
        let id = try again.lookup(Vault.rootID, Array("hello.txt".utf8))
        #expect(try again.read(id, offset: 0, count: 100) == Array(Self.helloText.utf8))
        #expect(try again.attributes(id).mtime == Self.clockStart)
        let report = try again.check()
        #expect(report.isClean, "\(report.storageProblems) \(report.damagedItems)")
    }

    /// The vector's vault opens from its listing's storage and holds hello.txt: the vector is a
    /// vault, not just bytes.
    @Test func theVectorStorageOpens() throws {
        let keys = try #require(try VectorFile.load("keys.txt", in: .module).first)
        let random = DeterministicRandom(seed: Self.seed)
        let storage = SimulatedStorageFolder()
        _ = try Storage.addCovers(to: storage, random: random)
        let secrets = { try VaultSecrets(pattern: try Pattern(parsing: try keys.string("PATTERN")), salt: try keys.hex("SALT"),
                                         rounds: try keys.int("ROUNDS")) }
        let vault = try Vault.open(storage: storage, secrets: try secrets(), random: random, clock: ManualClock(Self.clockStart))
        try vault.write(try vault.create(.file, in: Vault.rootID, named: Array("hello.txt".utf8), mode: 0o644), offset: 0,
                        bytes: Array(Self.helloText.utf8))
        try vault.lock()
        let again = try Vault.open(storage: storage, secrets: try secrets(), options: Vault.Options(readOnly: true))
        let id = try again.lookup(Vault.rootID, Array("hello.txt".utf8))
        let hello: [UInt8] = Array(Self.helloText.utf8)
        #expect(try again.read(id, offset: 0, count: 100) == hello)
        #expect(try again.attributes(id).mtime == Self.clockStart)
    }
}
