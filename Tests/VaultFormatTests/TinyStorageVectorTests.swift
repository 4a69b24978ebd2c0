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
/// `DOTSAFE_WRITE_VECTORS=1 swift test --filter TinyStorage` rewrites the file after a deliberate
/// change of the format or of the engine's order of random draws.
@Suite struct TinyStorageVectorTests {
    static let fileName = "tiny-storage.txt"
    static let seed = [UInt8](repeating: 0x7e, count: 32)
    static let clockStart: Int64 = 1_700_000_000_000_000_000
    static let helloText = "Hello, DotSafe!\n"

    /// The listing, with the header that says how it was made.
    static func listing() throws -> String {
        let keys = try #require(try VectorFile.load("keys.txt", in: .module).first)
        let patternText = try keys.string("PATTERN"), salt = try keys.hex("SALT"), rounds = try keys.int("ROUNDS")

        let random = DeterministicRandom(seed: seed)
        let clock = ManualClock(clockStart)
        let storage = SimulatedStorageFolder()
        let covers = try Storage.addCovers(to: storage, random: random)
        let secrets = try VaultSecrets(pattern: try Pattern(parsing: patternText), salt: salt, rounds: rounds)
        // The vector is format 1's (§10): a vault made as this release made it before format 2.
        var options = Vault.Options()
        options.newVaultFormat = .one
        let vault = try Vault.open(storage: storage, secrets: secrets, options: options, random: random, clock: clock)
        let id = try vault.create(.file, in: Vault.rootID, named: Array("hello.txt".utf8), mode: 0o644)
        try vault.write(id, offset: 0, bytes: Array(helloText.utf8))
        try vault.commit()
        try vault.lock()

        let files = storage.snapshot.sorted { $0.key < $1.key }
        var lines = [
            "# A whole storage (docs/FORMAT.md §10): a regression vector of DotSafe's Swift implementation,",
            "# written by Tests/VaultFormatTests/TinyStorageVectorTests.swift (DOTSAFE_WRITE_VECTORS=1).",
            "#",
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
            "# Any change to the format, the records, the draw order or the times changes this file.",
            "#",
            "# SEED: the stream's seed. CLOCK: nanoseconds since the Unix epoch for every time.",
            "# Then one line per file, sorted by name: name, SHA-256 of its F bytes.",
            "",
            "SEED = \(seed.hex)",
            "PATTERN = \(patternText)",
            "SALT = \(salt.hex)",
            "ROUNDS = \(rounds)",
            "CLOCK = \(clockStart)",
            "CONTENT = \(Array(helloText.utf8).hex)",
            "COVERS = \(covers)",
            "FILES = \(files.count)",
            "",
        ]
        lines += files.map { "\($0.key) \(sha256($0.value).hex)" }
        return lines.joined(separator: "\n") + "\n"
    }

    @Test func storageIsReproducedByteForByte() throws {
        let made = try Self.listing()
        if ProcessInfo.processInfo.environment["DOTSAFE_WRITE_VECTORS"] == "1" {
            try made.write(toFile: VectorFile.sourcePath(Self.fileName), atomically: true, encoding: .utf8)
        }
        let committed = try VectorFile.text(Self.fileName, in: .module)
        #expect(made == committed, "the storage differs from Vectors/\(Self.fileName); see the test's comment")
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
