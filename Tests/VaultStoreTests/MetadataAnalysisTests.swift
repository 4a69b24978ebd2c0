import Foundation
import Glibc
import Testing
import VaultCrypto
import VaultFormat
@testable import VaultStore

/// The pure analysis behind the metadata measurement and `dotsafe audit`, on known inputs.
@Suite struct MetadataAnalysisTests {
    @Test func aucOfKnownInputs() {
        #expect(Separation.auc(positives: [4, 5, 6], negatives: [1, 2, 3]) == 1)
        #expect(Separation.auc(positives: [1, 2, 3], negatives: [4, 5, 6]) == 0)
        #expect(Separation.symmetricAUC(positives: [1, 2, 3], negatives: [4, 5, 6]) == 1)
        #expect(Separation.auc(positives: [7, 7], negatives: [7, 7, 7]) == 0.5)
        // Pairs: 2>1, 2=2 (one half), 3>1, 3>2: 3.5 of 4.
        #expect(Separation.auc(positives: [2, 3], negatives: [1, 2]) == 0.875)
        #expect(Separation.auc(positives: [1, 3], negatives: [2]) == 0.5)
        #expect(Separation.auc(positives: [], negatives: [1]) == 0.5)
    }

    @Test func aucAgreesWithCountingPairs() {
        var generator = SystemRandomNumberGenerator()
        let positives = (0..<57).map { _ in Double(Int.random(in: 0..<20, using: &generator)) }
        let negatives = (0..<41).map { _ in Double(Int.random(in: 5..<25, using: &generator)) }
        var wins = 0.0
        for p in positives { for n in negatives { wins += p > n ? 1 : p == n ? 0.5 : 0 } }
        let expected = wins / Double(positives.count * negatives.count)
        #expect(abs(Separation.auc(positives: positives, negatives: negatives) - expected) < 1e-12)
    }

    @Test func rankCorrelation() {
        #expect(Separation.rankCorrelation([1, 2, 3, 4], [10, 20, 30, 40]) == 1)
        #expect(Separation.rankCorrelation([1, 2, 3, 4], [9, 7, 5, 1]) == -1)
        #expect(Separation.rankCorrelation([1, 1, 1], [1, 2, 3]) == 0)
    }

    @Test func burstsSplitAtGapsOverOneSecond() {
        let times: [(time: Double, label: Int?)] = [(0, 1), (0.5, 1), (1.4, 1), (3, 2), (10, 1), (10.2, 2), (10.9, 2), (20, 2)]
        let bursts = Burst.find(times)
        #expect(bursts.count == 2)
        #expect(bursts[0].start == 0 && bursts[0].end == 1.4 && bursts[0].counts == [1: 3])
        #expect(bursts[0].dominantLabel() == .some(1))
        #expect(bursts[1].size == 3 && bursts[1].counts == [1: 1, 2: 2])
        // 2 of 3 is under 90 %: no one vault's burst.
        #expect(bursts[1].dominantLabel() == nil)
        #expect(Burst.find([(5, nil)]).isEmpty)
    }

    @Test func fixedDecimals() {
        #expect(0.8754.fixed(3) == "0.875")
        #expect(1.0.fixed(3) == "1.000")
        #expect((-2.05).fixed(1) == "-2.1" || (-2.05).fixed(1) == "-2.0")
        #expect(12.0.fixed(0) == "12")
    }

    static func file(_ index: Int, birth: Int64, change: Int64, inode: UInt64) -> StorageScan.File {
        let metadata = FileMetadata(mode: UInt32(S_IFREG) | 0o600, uid: 0, gid: 0, size: Int64(Format.fileSize), inode: inode,
                                    links: 1, access: change, modification: change, change: change, birth: birth)
        return StorageScan.File(name: FileName.encode([UInt8](repeating: UInt8(index), count: 16)), order: index, metadata: metadata)
    }

    /// 64 covers made at t = 0 s, 32 files of a vault made at t = 100 s: birth time, inode and
    /// change time separate them perfectly; the vault's files form a burst of their own.
    @Test func separationFindsASessionAndAuditSeesIt() {
        let covers = (0..<64).map { Self.file($0, birth: Int64($0) * 1_000_000, change: Int64($0) * 1_000_000, inode: UInt64(100 + $0)) }
        let vault = (64..<96).map { Self.file($0, birth: 100_000_000_000 + Int64($0), change: 100_000_000_000 + Int64($0), inode: UInt64(100 + $0)) }
        let scan = StorageScan(files: covers + vault, otherEntries: 0, fileSystemType: 0xEF53)
        let labels = Dictionary(uniqueKeysWithValues: covers.map { ($0.name, 0) } + vault.map { ($0.name, 2) })
        let measure = MetadataSeparation(scan: scan, labels: labels, hidden: 2, covers: 0, vaults: [1, 2])
        #expect(measure.positives == 32 && measure.negatives == 64)
        for feature in [MetadataFeature.btime, .ctime, .mtime, .inode, .order] {
            #expect(measure.rows.first { $0.feature == feature }?.auc == 1, "\(feature)")
        }
        #expect(measure.rows.first { $0.feature == .size }?.auc == 0.5)
        #expect(measure.vaultBursts.contains { $0.feature == .btime && $0.label == 2 && $0.burst.size == 32 })
        #expect(measure.failing(above: 0.75).count >= 5)

        let audit = MetadataAudit(scan: scan)
        #expect(audit.fileCount == 96 && audit.countIsMultipleOf16)
        #expect(audit.sizes == [Int64(Format.fileSize): 96])
        let fields = Dictionary(uniqueKeysWithValues: audit.fields.map { ($0.feature, $0) })
        #expect(fields[.size]?.verdict == .hides)
        #expect(fields[.btime]?.verdict == .bursts && fields[.btime]?.bursts.count == 2)
        #expect(fields[.inode]?.verdict == .creationOrder)
        #expect(fields[.btime]?.histogram.reduce(0, +) == 96)
        #expect(fields[.btime]?.histogram.first == 64 && fields[.btime]?.histogram.last == 32)
        #expect(audit.fileSystem.name == "ext4")
    }

    @Test func scanReadsMetadataWithoutTouchingAccessTimes() throws {
        let base = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/dotsafe-test-scan-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: base) }
        try Storage.initialize(at: base, random: SystemRandom())
        // Access times in the past, so that a read would move them (relatime).
        for name in try FileManager.default.contentsOfDirectory(atPath: base) {
            var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 2_000_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, base + "/" + name, &times, 0) == 0)
        }
        try FileManager.default.createDirectory(atPath: base + "/not-a-storage-file", withIntermediateDirectories: false)
        let scan = try StorageScan.scan(base)
        #expect(scan.otherEntries == 1)
        #expect(scan.files.map(\.order) == Array(0..<scan.files.count))
        for file in scan.files {
            #expect(file.metadata.access == 1_000_000_000_000_000 && file.metadata.modification == 2_000_000_000_000_000)
            #expect(file.metadata.isRegular && file.metadata.size == Int64(Format.fileSize) && file.metadata.links == 1)
            var info = stat()
            #expect(lstat(base + "/" + file.name, &info) == 0)
            #expect(UInt64(info.st_ino) == file.metadata.inode)
        }
        // A storage read through DiskStorageFolder (O_NOATIME) keeps its access times too.
        let folder = try Storage.open(at: base)
        _ = try folder.read(scan.files[0].name)
        #expect(try StorageScan.scan(base).files.allSatisfy { $0.metadata.access == 1_000_000_000_000_000 })
    }

    @Test func scanRefusesAFolderThatIsNotAStorage() throws {
        let base = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/dotsafe-test-scan-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: base) }
        #expect(throws: StoreError.notAStorage("\(base) holds 0 storage files, a storage has at least 64")) { try StorageScan.scan(base) }
        #expect(throws: StoreError.self) { try StorageScan.scan(base + "/missing") }
    }
}
