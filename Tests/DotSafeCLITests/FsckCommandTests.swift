import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// `dotsafe fsck`: a clean vault passes; tampered chunks and packs and a missing chunk file are
/// reported by path with exit 1; --repair drops only those and leaves the rest byte for byte;
/// an index that does not open is reported with mount's message, and nothing is written.
@Suite struct FsckCommandTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"
    static let p = Format.payloadSize

    struct Fixture {
        let base: String
        let environment: [String: String]
        var storage: String { base + "/storage" }
        let contents: [String: [UInt8]]

        func fsck(_ extra: [String] = []) -> CLIRun {
            CLIRun(["fsck", storage, "--pattern", FsckCommandTests.pattern] + extra, environment: environment)
        }

        func secrets() throws -> VaultSecrets {
            let salt = try #require(try Keyring(option: nil, environment: environment).patternSalt())
            return try VaultSecrets(pattern: Pattern(parsing: FsckCommandTests.pattern), salt: salt)
        }

        /// Opens the vault (read-only) for a look at where things lie, or at their bytes.
        func withVault<R>(_ body: (Vault) throws -> R) throws -> R {
            let vault = try Vault.open(storage: try Storage.open(at: storage), secrets: try secrets(), options: .likeDotsafe(readOnly: true))
            defer { try? vault.lock() }
            return try body(vault)
        }

        func id(_ path: String, in vault: Vault) throws -> UInt64 {
            try path.split(separator: "/").reduce(Vault.rootID) { try vault.lookup($0, Array($1.utf8)) }
        }

        func fileName(_ number: UInt64) throws -> String { try storage + "/" + withVault { try $0.storageName(ofFile: number) } }

        /// Storage file number of chunk `index` of `path` (or of its pack, for index nil).
        func fileNumber(_ path: String, chunk index: Int?) throws -> (number: UInt64, offset: Int) {
            try withVault { vault in
                let id = try id(path, in: vault)
                return vault.state.withLock { state in
                    let item = state.tree.items[id]!
                    if let index { return (item.chunks[index]!.fileNumber, 0) }
                    let member = item.packedMember!
                    return (member.fileNumber, Int(member.offset))
                }
            }
        }

        func flipByte(in path: String, at offset: Int) throws {
            let handle = try #require(FileHandle(forUpdatingAtPath: path))
            defer { try? handle.close() }
            try handle.seek(toOffset: UInt64(offset))
            let byte = try #require(try handle.read(upToCount: 1)).first!
            try handle.seek(toOffset: UInt64(offset))
            try handle.write(contentsOf: [byte ^ 0x01])
        }

        func read(_ path: String) throws -> [UInt8] {
            try withVault { vault in
                let id = try id(path, in: vault)
                return try vault.read(id, offset: 0, count: Int(try vault.attributes(id).size))
            }
        }

        /// SHA-256 of every file of the storage, by name.
        func snapshot() throws -> [String: [UInt8]] {
            var result: [String: [UInt8]] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: storage) {
                result[name] = SHA256.hash(Array(try Data(contentsOf: URL(fileURLWithPath: storage + "/" + name))))
            }
            return result
        }
    }

    /// A storage with a vault holding a folder, two chunked files and two packed ones.
    static func fixture() throws -> Fixture {
        let (base, environment) = try InitAndKeyringCommandTests.workspace()
        let made = CLIRun(["init", base + "/storage"], environment: environment)
        #expect(made.status == 0, "\(made)")
        var random = DeterministicBytes(seed: 7)
        let contents: [String: [UInt8]] = [
            "docs/big.bin": random.next(2 * p + 100),
            "keep.bin": random.next(2 * p),
            "a.txt": random.next(1000),
            "b.txt": random.next(3000),
        ]
        let fixture = Fixture(base: base, environment: environment, contents: contents)
        let vault = try Vault.open(storage: try Storage.open(at: fixture.storage), secrets: try fixture.secrets())
        let docs = try vault.create(.folder, in: Vault.rootID, named: Array("docs".utf8), mode: 0o755)
        for (path, bytes) in contents.sorted(by: { $0.key < $1.key }) {
            let parent = path.hasPrefix("docs/") ? docs : Vault.rootID
            let id = try vault.create(.file, in: parent, named: Array(path.split(separator: "/").last!.utf8), mode: 0o644)
            try vault.write(id, offset: 0, bytes: bytes)
        }
        try vault.lock()
        return fixture
    }

    @Test func aCleanVaultPasses() throws {
        let fixture = try Self.fixture()
        defer { try? FileManager.default.removeItem(atPath: fixture.base) }
        let before = try fixture.snapshot()
        let run = fixture.fsck()
        #expect(run.status == 0, "\(run)")
        #expect(run.standardOutput.hasSuffix(": clean.\n"), "\(run)")
        #expect(run.standardOutput.contains("6 items, 5 chunks, 2 pack members"), "\(run)")
        #expect(try fixture.snapshot() == before)
    }

    /// The format-1 fixture of the VaultCore tests (docs/FORMAT.md §13.9): `fsck` reads it as
    /// format 1, and again once its first commit has made it format 2, when its chunks and most
    /// of its members are still format-1 seals, read with the item keys the upgrade kept.
    @Test func aFormatOneVaultAndItsUpgradePass() throws {
        let (base, environment) = try InitAndKeyringCommandTests.workspace()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let archive = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("VaultCoreTests/Fixtures/format1.tar.gz").path
        let untar = CommandResult.run("/bin/tar", ["-xzf", archive, "-C", base])
        try #require(untar.status == 0, "\(untar.error)")
        let pattern = "a1-b2-c3-d4-e5-e4-d3"
        func fsck() -> CLIRun { CLIRun(["fsck", base + "/storage", "--pattern", pattern], environment: environment) }
        let formatOne = fsck()
        #expect(formatOne.status == 0 && formatOne.standardOutput.hasSuffix(": clean.\n"), "\(formatOne)")
        #expect(formatOne.standardOutput.contains("14 items, 3 chunks, 5 pack members"), "\(formatOne)")

        let salt = try #require(try Keyring(option: nil, environment: environment).patternSalt())
        let vault = try Vault.open(storage: try Storage.open(at: base + "/storage"),
                                   secrets: try VaultSecrets(pattern: Pattern(parsing: pattern), salt: salt))
        let hello = try vault.lookup(try vault.lookup(Vault.rootID, Array("docs".utf8)), Array("hello.txt".utf8))
        try vault.write(hello, offset: 0, bytes: Array("HELLO".utf8))
        try vault.commit()
        #expect(vault.formatVersion == 2)
        try vault.lock()
        let storage = try FileManager.default.contentsOfDirectory(atPath: base + "/storage").sorted()
        let upgraded = fsck()
        #expect(upgraded.status == 0 && upgraded.standardOutput.hasSuffix(": clean.\n"), "\(upgraded)")
        #expect(upgraded.standardOutput.contains("14 items, 3 chunks, 5 pack members"), "\(upgraded)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: base + "/storage").sorted() == storage, "fsck writes nothing")
    }

    @Test func damageIsReportedByPathAndRepairDropsOnlyIt() throws {
        let fixture = try Self.fixture()
        defer { try? FileManager.default.removeItem(atPath: fixture.base) }
        let bigChunk = try fixture.fileNumber("docs/big.bin", chunk: 1)
        let keepChunk = try fixture.fileNumber("keep.bin", chunk: 0)
        let pack = try fixture.fileNumber("a.txt", chunk: nil)
        try fixture.flipByte(in: try fixture.fileName(bigChunk.number), at: 5000)
        try fixture.flipByte(in: try fixture.fileName(pack.number), at: pack.offset + 10)
        try FileManager.default.removeItem(atPath: try fixture.fileName(keepChunk.number))
        let before = try fixture.snapshot()

        let run = fixture.fsck()
        #expect(run.status == 1, "\(run)")
        for line in ["damaged: docs/big.bin: chunk 2 of 3 does not open",
                     "damaged: a.txt: pack member does not open",
                     "damaged: keep.bin: chunk 1 of 2: chunk file missing",
                     "storage: file \(keepChunk.number) of the vault is missing",
                     "storage: the storage holds \(before.count) files, not a multiple of 16",
                     "3 damaged items, 2 storage problems."] {
            #expect(run.standardOutput.contains(line), "\(line)\n\(run)")
        }
        #expect(!run.standardOutput.contains("b.txt"), "\(run)")
        #expect(try fixture.snapshot() == before, "fsck without --repair wrote")

        let repair = fixture.fsck(["--repair"])
        #expect(repair.status == 0, "\(repair)")
        #expect(repair.standardOutput.contains("  docs/big.bin: chunk 2 (bytes 262144…524287) becomes zeros"), "\(repair)")
        #expect(repair.standardOutput.contains("  a.txt: its content becomes zeros (size kept)"), "\(repair)")
        #expect(repair.standardOutput.contains("  keep.bin: chunk 1 (bytes 0…262143) becomes zeros"), "\(repair)")

        let again = fixture.fsck()
        #expect(again.status == 0, "\(again)")
        #expect(again.standardOutput.hasSuffix(": clean.\n"), "\(again)")
        let big = fixture.contents["docs/big.bin"]!, keep = fixture.contents["keep.bin"]!
        #expect(try fixture.read("b.txt") == fixture.contents["b.txt"]!)
        #expect(try fixture.read("a.txt") == [UInt8](repeating: 0, count: 1000))
        #expect(try fixture.read("docs/big.bin") == Array(big[..<Self.p]) + [UInt8](repeating: 0, count: Self.p) + Array(big[(2 * Self.p)...]))
        #expect(try fixture.read("keep.bin") == [UInt8](repeating: 0, count: Self.p) + Array(keep[Self.p...]))
        // What became zeros is a hole: no blocks, and SEEK_HOLE / SEEK_DATA find it.
        try fixture.withVault { vault in
            let big = try fixture.id("docs/big.bin", in: vault), keep = try fixture.id("keep.bin", in: vault)
            let p = UInt64(Self.p)
            #expect(try vault.attributes(big).allocatedBytes == p + 100 && vault.attributes(keep).allocatedBytes == p)
            #expect(try vault.seek(big, from: 0, to: .hole) == p && vault.seek(big, from: p, to: .data) == 2 * p)
            #expect(try vault.seek(keep, from: 0, to: .data) == p && vault.seek(keep, from: 0, to: .hole) == 0)
        }
    }

    /// A daemon killed after it made a group and before its commit, and a lock's re-creation
    /// cut short, leave files that the next writing open removes: no damage, one line, exit 0.
    @Test func whatAnInterruptedSessionLeftIsNoDamage() throws {
        let fixture = try Self.fixture()
        defer { try? FileManager.default.removeItem(atPath: fixture.base) }
        let next = try fixture.withVault { vault in vault.state.withLock { $0.writer.allocator.nextFileNumber } }
        var random = DeterministicBytes(seed: 9)
        for number in next..<next + UInt64(Format.groupSize) {
            try Data(random.next(Format.fileSize)).write(to: URL(fileURLWithPath: try fixture.fileName(number)))
        }
        let copied = try fixture.fileName(next - 1)
        try FileManager.default.copyItem(atPath: copied, toPath: copied + StorageRecreator.temporarySuffix)
        let before = try fixture.snapshot()

        let run = fixture.fsck()
        #expect(run.status == 0, "\(run)")
        #expect(run.standardOutput.contains("left by an interrupted session: 16 files of the vault and 1 re-creation copy; "
                                            + "the next writable mount removes them\n"), "\(run)")
        #expect(!run.standardOutput.contains("stray"), "\(run)")
        #expect(run.standardOutput.hasSuffix(": clean.\n"), "\(run)")
        #expect(try fixture.snapshot() == before, "fsck wrote")

        // As said: a writing open removes them, and fsck has nothing more to say.
        let vault = try Vault.open(storage: try Storage.open(at: fixture.storage), secrets: try fixture.secrets(), options: .likeDotsafe())
        try vault.lock()
        #expect(try fixture.snapshot().count == before.count - 17)
        let again = fixture.fsck()
        #expect(again.status == 0 && !again.standardOutput.contains("interrupted"), "\(again)")
    }

    /// A sync killed while downloading leaves its download folder (FORMAT.md §13.11): fsck
    /// counts it as left by an interrupted session, but says nothing of the folder of a sync
    /// still running (it holds the folder's lock); the next sync removes the leftover.
    @Test func aKilledSyncsDownloadFolderIsCountedUntilTheNextSync() throws {
        let fixture = try Self.fixture()
        defer { try? FileManager.default.removeItem(atPath: fixture.base) }
        let remote = fixture.base + "/remote"
        let up = SyncCommandTests.sync(fixture.storage, remote, fixture.environment, device: "laptop")
        try #require(up.status == 0, "\(up)")
        func entries() throws -> Set<String> { Set(try FileManager.default.contentsOfDirectory(atPath: fixture.storage)) }
        let before = try entries()
        var running: DownloadFolder? = try DownloadFolder(storagePath: fixture.storage, random: SystemRandom())
        let folder = try #require(running?.path)
        // A torn download in it, as rclone leaves one.
        #expect(FileManager.default.createFile(atPath: folder + "/" + (before.first { FileName.isWellFormed($0) } ?? "x"),
                                               contents: Data(count: 1000)))

        let whileRunning = fixture.fsck()
        #expect(whileRunning.status == 0 && !whileRunning.standardOutput.contains("interrupted"), "\(whileRunning)")
        #expect(whileRunning.standardOutput.hasSuffix(": clean.\n"), "\(whileRunning)")

        running = nil  // the sync is killed: its lock goes with its descriptor
        let left = fixture.fsck()
        #expect(left.status == 0, "\(left)")
        #expect(left.standardOutput.contains("left by an interrupted session: 1 download folder of a sync; "
                                             + "the next sync or writable mount removes it\n"), "\(left)")
        #expect(left.standardOutput.hasSuffix(": clean.\n"), "\(left)")
        #expect(try entries() == before.union([(folder as NSString).lastPathComponent]), "fsck wrote")

        let next = SyncCommandTests.sync(fixture.storage, remote, fixture.environment, device: "laptop")
        #expect(next.status == 0, "\(next)")
        #expect(!(try entries()).contains { $0.hasSuffix(DownloadFolder.suffix) }, "the next sync leaves the leftover")
        let again = fixture.fsck()
        #expect(again.status == 0 && !again.standardOutput.contains("interrupted"), "\(again)")
    }

    @Test func aDamagedIndexIsReportedAndNothingIsWritten() throws {
        let fixture = try Self.fixture()
        defer { try? FileManager.default.removeItem(atPath: fixture.base) }
        for slot: UInt64 in [0, 1] { try fixture.flipByte(in: try fixture.fileName(slot), at: 100) }
        let before = try fixture.snapshot()
        for extra in [[], ["--repair"]] {
            let run = fixture.fsck(extra)
            #expect(run.status == 1, "\(run)")
            #expect(run.standardError.contains("the vault's index is damaged"), "\(run)")
            #expect(try fixture.snapshot() == before)
        }
    }

    @Test func aPatternWithoutAVaultFails() throws {
        let fixture = try Self.fixture()
        defer { try? FileManager.default.removeItem(atPath: fixture.base) }
        let run = CLIRun(["fsck", fixture.storage, "--pattern", "a1-a2-a3-a4"], environment: fixture.environment)
        #expect(run.status == 1, "\(run)")
        #expect(run.standardError.contains("no vault opens with this pattern"), "\(run)")
    }
}

/// Reproducible test bytes (xorshift): content that compresses nothing and differs per file.
struct DeterministicBytes {
    var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }
    mutating func next(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
    }
}
