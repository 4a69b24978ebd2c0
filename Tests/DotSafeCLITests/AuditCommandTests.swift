import Foundation
import Glibc
import Testing
import VaultCrypto
import VaultFormat
import VaultStore

/// `dotsafe audit STORAGE`: the report a user reads, its JSON, its refusal of folders that are
/// not storages, and that looking changes nothing (no access, change or modification time).
@Suite struct AuditCommandTests {
    /// A storage from `init`, then 16 more files made over a second later (as a vault's first
    /// group would be): two bursts of birth and change times.
    static func storage() throws -> String {
        let base = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/dotsafe-test-audit-\(UUID().uuidString)"
        let random = SystemRandom()
        try Storage.initialize(at: base, random: random)
        usleep(1_500_000)
        let folder = try Storage.open(at: base)
        for _ in 0..<16 {
            try folder.create(FileName.encode(try random.bytes(16)), contents: try random.bytes(Format.fileSize), durable: false)
        }
        return base
    }

    static func times(_ path: String) throws -> [String: [Int]] {
        var result: [String: [Int]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: path) + ["."] {
            var info = stat()
            #expect(lstat(path + "/" + name, &info) == 0)
            result[name] = [info.st_atim.tv_sec, info.st_atim.tv_nsec, info.st_mtim.tv_sec, info.st_mtim.tv_nsec,
                            info.st_ctim.tv_sec, info.st_ctim.tv_nsec].map { Int($0) }
        }
        return result
    }

    @Test func reportShowsCountSizesFieldsAndVerdicts() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let files = try FileManager.default.contentsOfDirectory(atPath: path).count
        let run = CLIRun(["audit", path])
        #expect(run.status == 0 && run.standardError.isEmpty, "\(run)")
        let lines = run.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let scan = try StorageScan.scan(path)
        let fileSystem = FileSystemLimits(type: scan.fileSystemType)
        #expect(lines[0] == "Storage \(path) on \(fileSystem.name): \(files) storage files (a multiple of 16), 0 other entries ignored.")
        #expect(lines[1] == "Sizes: \(files) files of 262192 bytes.")
        #expect(lines[2] == "Names: 26 random-looking base32 characters, no extension (every storage file).")
        #expect(lines[4].hasPrefix("field ") && lines[4].hasSuffix("verdict"))
        // One row per field, columns aligned: the verdict starts in the same column everywhere.
        let rows = Array(lines[5..<(5 + MetadataFeature.allCases.count - (scan.files[0].metadata.birth == nil ? 3 : 0)
                                       - (scan.files[0].extents == nil ? 2 : 0))])
        let verdictColumn = lines[4].distance(from: lines[4].startIndex, to: lines[4].range(of: "verdict")!.lowerBound)
        for row in rows {
            let word = String(row.split(separator: " ")[0])
            #expect(MetadataFeature(rawValue: word) != nil, "\(row)")
            let verdict = String(row.dropFirst(verdictColumn))
            #expect(["hides:", "bursts:", "creation order:", "reads:", "pieces:"].contains { verdict.hasPrefix($0) }, "\(row)")
        }
        let size = try #require(rows.first { $0.hasPrefix("size ") })
        #expect(size.contains("262192") && size.hasSuffix("hides: the same for every file"))
        if scan.files[0].metadata.birth != nil {
            let birth = try #require(rows.first { $0.hasPrefix("btime ") })
            #expect(birth.contains("bursts: 2 bursts of files within 1 s"), "\(birth)")
        }
        let limits = lines.firstIndex(of: "What \(fileSystem.name) records that no program can set:")
        #expect(limits != nil)
        #expect(lines.contains("  - re-creating a file (same bytes) is the only way to move its birth time, ctime and inode"))
    }

    @Test func jsonHasTheExpectedKeys() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let run = CLIRun(["audit", "--json", path])
        #expect(run.status == 0, "\(run)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["storage", "fileSystem", "files", "multipleOf16", "otherEntries", "sizes", "fields", "cannotHide"])
        #expect(object["storage"] as? String == path)
        #expect(object["multipleOf16"] as? Bool == true)
        #expect((object["sizes"] as? [String: Int])?["262192"] == object["files"] as? Int)
        let fields = try #require(object["fields"] as? [[String: Any]])
        #expect(fields.count >= MetadataFeature.allCases.count - 3)
        for field in fields {
            #expect(Set(field.keys) == ["field", "min", "max", "distinct", "histogram", "bursts", "verdict", "detail"])
            #expect((field["histogram"] as? [Int])?.reduce(0, +) == object["files"] as? Int)
        }
        #expect(fields.contains { $0["field"] as? String == "inode" })
    }

    @Test func refusesAFolderThatIsNotAStorage() throws {
        let base = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/dotsafe-test-audit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: base) }
        FileManager.default.createFile(atPath: base + "/notes.txt", contents: Data("keep".utf8))
        let run = CLIRun(["audit", base])
        #expect(run == CLIRun(status: 1, standardError: "dotsafe: not a DotSafe storage: \(base) holds 0 storage files, a storage has at least 64\n"))
        let missing = CLIRun(["audit", base + "/missing"])
        #expect(missing.status == 1 && missing.standardOutput.isEmpty)
        #expect(missing.standardError == "dotsafe: not a DotSafe storage: \(base)/missing cannot be opened as a folder (open \(base)/missing: No such file or directory)\n")
        #expect(FileManager.default.contents(atPath: base + "/notes.txt") == Data("keep".utf8))
        #expect(CLIRun(["audit"]).status == 64)
    }

    @Test func leavesEveryTimeUnchanged() throws {
        let path = try Self.storage()
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Access times older than the modification times: any read would move them (relatime).
        for name in try FileManager.default.contentsOfDirectory(atPath: path) + ["."] {
            var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 0, tv_nsec: Int(UTIME_OMIT_VALUE))]
            #expect(utimensat(AT_FDCWD, path + "/" + name, &times, 0) == 0)
        }
        let before = try Self.times(path)
        #expect(CLIRun(["audit", path]).status == 0)
        #expect(CLIRun(["audit", "--json", path]).status == 0)
        #expect(try Self.times(path) == before)
    }
}

/// UTIME_OMIT ((1 << 30) - 2): not imported from Glibc.
let UTIME_OMIT_VALUE = (1 << 30) - 2
