import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultCore
import VaultCrypto
import VaultStore

/// R-DEN-1, measured as an observer would: the real `dotsafe` builds a storage (`init`, then
/// vault sessions through real mounts), then every storage file's statx metadata is read and
/// labelled with the vaults' own names (derived from pattern and keyring), and for every
/// feature the AUC of telling the hidden vault B's files from `init`'s covers is computed,
/// with the bursts of one vault's files. On the tests' folder (ext4 here) and on a tmpfs. Before
/// the lock re-created files, every time field separated B perfectly (docs/FORMAT.md §11.4).
///
/// `tools/metadata-measure` runs this suite with more data (DOTSAFE_MEASURE_CHUNKS) and prints
/// the tables (DOTSAFE_MEASURE_REPORT).
@Suite(.serialized) struct MetadataMeasurementTests {
    static let patternA = "b2-c2-d3-d4-c4-b4-a5"
    static let patternB = "c3-d2-e1-e2-d1-c1-b1"
    static let covers = 0, vaultA = 1, vaultB = 2

    enum Place: String, CaseIterable { case disk, tmpfs }
    /// The order of sessions: B in the middle, B last, or both mounted at once.
    enum Sessions: String, CaseIterable { case abThenA = "A, B, A", hiddenLast = "A, B", together = "A+B at once" }

    static var chunks: Int { Int(ProcessInfo.processInfo.environment["DOTSAFE_MEASURE_CHUNKS"] ?? "") ?? 100 }

    /// The lock's re-creation (docs/FORMAT.md §11.2–§11.3) with the default budget: what a user
    /// gets. DOTSAFE_MEASURE_BUDGET gives another (`tools/metadata-measure`: 3600, the whole
    /// share on any disk).
    static var budget: String? { ProcessInfo.processInfo.environment["DOTSAFE_MEASURE_BUDGET"] }

    @Test(arguments: Place.allCases, Sessions.allCases)
    func metadataDoesNotSeparateTheHiddenVault(place: Place, sessions: Sessions) throws {
        let h = try MountHarness(initialise: false)
        // After the harness has locked every vault (whose daemons hold the folder open).
        defer {
            if place == .tmpfs {
                h.sh("umount \(h.storage)")
                h.sh("rm -rf --one-file-system \(h.base)")
            }
        }
        defer { h.finish() }
        if place == .tmpfs {
            try FileManager.default.createDirectory(atPath: h.storage, withIntermediateDirectories: false)
            try #require(h.sh("mount -t tmpfs -o size=1g,mode=0700 dotsafe-test-tmpfs \(h.storage)").status == 0)
        }
        try #require(h.dotsafe(["init", h.storage]).status == 0)
        let initCovers = Set(try FileManager.default.contentsOfDirectory(atPath: h.storage))
        try runSessions(sessions, h) { othersMounted in
            // After every lock no copy is left under a temporary name; once no vault is mounted
            // (a mounted one may be making a group), the count is a whole number of groups.
            let names = try FileManager.default.contentsOfDirectory(atPath: h.storage)
            #expect(!names.contains { $0.hasSuffix(".recreated") })
            #expect(othersMounted || names.count % 16 == 0, "\(names.count) entries")
        }

        // Format 2 names a vault's files from its unlock record and root: known once it exists.
        let owned = try [Self.vaultA: Self.vaultNames(h, Self.patternA), Self.vaultB: Self.vaultNames(h, Self.patternB)]
        let scan = try StorageScan.scan(h.storage)
        let labels = Self.labels(owned, initCovers: initCovers, names: scan.files.map(\.name))
        #expect(labels.count == scan.files.count, "every storage file is a cover or a vault's")
        let measure = MetadataSeparation(scan: scan, labels: labels, hidden: Self.vaultB, covers: Self.covers,
                                         vaults: [Self.vaultA, Self.vaultB])
        #expect(measure.positives >= 100 && measure.negatives >= 64)
        Self.report("\(place.rawValue) (\(FileSystemLimits(type: scan.fileSystemType).name)), sessions \(sessions.rawValue), re-creation at lock (budget \(Self.budget ?? "default") s/GiB)", measure)
        if place == .tmpfs { #expect(scan.fileSystemType == 0x0102_1994) }
        #expect(measure.failing(above: 0.75).isEmpty, "\(measure.table)")
        #expect(measure.vaultBursts.isEmpty, "\(measure.table)")
    }

    /// Vault sessions through real mounts, at least `chunks` chunk files per vault, with more
    /// than a second between sessions (as hours would be).
    /// `afterLock(whether another vault is still mounted)` runs after each lock.
    private func runSessions(_ sessions: Sessions, _ h: MountHarness, afterLock: (Bool) throws -> Void) throws {
        let a = try h.mountPoint("a"), b = try h.mountPoint("b")
        let n = Self.chunks
        let options = Self.budget.map { ["--recreate-budget", $0] } ?? []
        func session(_ point: String, _ pattern: String, _ script: String) throws {
            sleep(2)
            try #require(h.mount(point, pattern: pattern, options: options).status == 0)
            h.sh(script, in: point)
            try #require(h.lock(point).status == 0)
            try afterLock(false)
        }
        let firstWrite = "dd if=/dev/urandom of=big bs=256K count=\(n) status=none && mkdir -p notes && for i in 1 2 3 4 5; do echo note $i > notes/$i.txt; done"
        switch sessions {
        case .abThenA, .hiddenLast:
            try session(a, Self.patternA, firstWrite)
            try session(b, Self.patternB, firstWrite)
            if sessions == .abThenA {
                try session(a, Self.patternA, "dd if=/dev/urandom of=big bs=256K count=\(n / 4) seek=\(n / 2) conv=notrunc status=none && echo more > notes/6.txt")
            }
        case .together:
            sleep(2)
            try #require(h.mount(a, pattern: Self.patternA, options: options).status == 0)
            try #require(h.mount(b, pattern: Self.patternB, options: options).status == 0)
            h.sh("(cd \(a) && \(firstWrite)) & (cd \(b) && \(firstWrite)) & wait")
            try #require(h.lock(a).status == 0)
            try afterLock(true)
            try #require(h.lock(b).status == 0)
            try afterLock(false)
        }
    }

    /// The names a vault gives its file numbers 0 … 4095 (found through pattern and keyring).
    static func vaultNames(_ h: MountHarness, _ pattern: String) throws -> Set<String> {
        let salt = try Keyring(option: h.environment["DOTSAFE_KEYRING"], environment: h.environment).requiredPatternSalt()
        let secrets = try VaultSecrets(pattern: try Pattern(parsing: pattern), salt: salt)
        let vault = try Vault.open(storage: try Storage.open(at: h.storage), secrets: secrets, options: .likeDotsafe(readOnly: true))
        defer { try? vault.lock() }
        return Set(try (0..<UInt64(4096)).map { try vault.storageName(ofFile: $0) })
    }

    /// Each file's class: a vault's when its name is one the vault derives, a cover when
    /// `init` made it.
    static func labels(_ owned: [Int: Set<String>], initCovers: Set<String>, names: [String]) -> [String: Int] {
        var labels: [String: Int] = [:]
        for name in names {
            if let (label, _) = owned.first(where: { $0.value.contains(name) }) {
                labels[name] = label
            } else if initCovers.contains(name) {
                labels[name] = covers
            }
        }
        return labels
    }

    static func report(_ title: String, _ measure: MetadataSeparation) {
        let text = "== \(title): hidden vault B vs init covers\n\(measure.table)\n"
        print(text)
        if let path = ProcessInfo.processInfo.environment["DOTSAFE_MEASURE_REPORT"],
           let handle = FileHandle(forWritingAtPath: path) ?? (FileManager.default.createFile(atPath: path, contents: nil) ? FileHandle(forWritingAtPath: path) : nil) {
            handle.seekToEndOfFile()
            handle.write(Data(text.utf8))
            try? handle.close()
        }
    }
}
