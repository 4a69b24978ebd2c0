import Foundation
import Testing

/// One record of a vector file: its fields, the `[…]` section headers above it, and whether it is
/// marked `FAIL` (must be rejected).
public struct VectorRecord: CustomStringConvertible, Sendable {
    public var section: [String: String] = [:]
    public var fields: [String: String] = [:]
    public var isFail = false
    public var line = 0

    public init(section: [String: String] = [:], fields: [String: String] = [:], line: Int = 0) {
        self.section = section; self.fields = fields; self.line = line
    }

    public func string(_ name: String) throws -> String {
        try #require(fields[name], "field \(name) missing in record at line \(line)")
    }

    public func hex(_ name: String) throws -> [UInt8] { try hexBytes(string(name)) }

    public func int(_ name: String) throws -> Int {
        try #require(Int(string(name)), "field \(name) is not an integer at line \(line)")
    }

    public func uint64(_ name: String) throws -> UInt64 {
        try #require(UInt64(string(name)), "field \(name) is not an unsigned integer at line \(line)")
    }

    /// A text field holding a space-separated list (empty: no items), each item split at `separator`.
    public func list(_ name: String, separator: Character = ":") throws -> [[String]] {
        try string(name).split(separator: " ").map { $0.split(separator: separator, omittingEmptySubsequences: false).map(String.init) }
    }

    public var description: String { "record at line \(line)" }
}

/// Reader for the `NAME = VALUE` files of NIST CAVP, the RFCs' vectors as written out in
/// Tests/VaultCryptoTests/Vectors, and docs/FORMAT.md §10: `#` comments, records that start at a
/// `COUNT`/`Count` line (blank lines may appear inside a record, as in the RFC 5869 file), a run of
/// `[…]` lines replacing the section headers, `FAIL` marking a record that must be rejected.
public enum VectorFile {
    /// The `Vectors` folder of a test target's bundle: pass the target's own `Bundle.module`.
    public static func folder(in bundle: Bundle) throws -> URL {
        try #require(bundle.url(forResource: "Vectors", withExtension: nil), "no Vectors folder in \(bundle.bundlePath)")
    }

    public static func text(_ name: String, in bundle: Bundle) throws -> String {
        try String(contentsOf: folder(in: bundle).appendingPathComponent(name), encoding: .utf8)
    }

    public static func load(_ name: String, in bundle: Bundle) throws -> [VectorRecord] {
        parse(try text(name, in: bundle))
    }

    /// Where a target's committed vectors live in the source tree, for rewriting one a test makes:
    /// `file` is the calling test's own path, whose folder holds `Vectors/`.
    public static func sourcePath(_ name: String, file: String = #filePath) -> String {
        URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent("Vectors/\(name)").path
    }

    public static func parse(_ text: String) -> [VectorRecord] {
        var records: [VectorRecord] = []
        var current: VectorRecord?
        var section: [String: String] = [:]
        var previousWasHeader = false
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                if let record = current { records.append(record); current = nil }
                if !previousWasHeader { section = [:] }
                let (name, value) = splitField(String(line.dropFirst().dropLast()))
                section[name] = value
                previousWasHeader = true
                continue
            }
            previousWasHeader = false
            if line == "FAIL" {
                current?.isFail = true
                continue
            }
            let (name, value) = splitField(line)
            if name.lowercased() == "count" {
                if let record = current { records.append(record) }
                current = VectorRecord(section: section, line: number + 1)
            }
            current?.fields[name] = value
        }
        if let record = current { records.append(record) }
        return records
    }

    private static func splitField(_ line: String) -> (String, String) {
        guard let equals = line.firstIndex(of: "=") else { return (line, "") }
        let name = line[..<equals].trimmingCharacters(in: .whitespaces)
        let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        return (name, value)
    }
}
