import Foundation
import Testing

/// One record of a vector file: its fields, the `[…]` section headers above it, and whether it is
/// marked `FAIL` (must be rejected).
struct VectorRecord: CustomStringConvertible {
    var section: [String: String] = [:]
    var fields: [String: String] = [:]
    var isFail = false
    var line = 0

    func string(_ name: String) throws -> String {
        try #require(fields[name], "field \(name) missing in record at line \(line)")
    }

    func hex(_ name: String) throws -> [UInt8] {
        try hexBytes(string(name))
    }

    func int(_ name: String) throws -> Int {
        try #require(Int(string(name)), "field \(name) is not an integer at line \(line)")
    }

    var description: String { "record at line \(line)" }
}

/// Reader for the `NAME = VALUE` files used by NIST CAVP, the cryptography vectors package, and the
/// files written here (see Vectors/README.md).
enum VectorFile {
    /// Loads a file from the test bundle's `Vectors` folder.
    static func load(_ name: String) throws -> [VectorRecord] {
        let folder = try #require(Bundle.module.url(forResource: "Vectors", withExtension: nil))
        let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
        return parse(text)
    }

    /// Records start at a `Count`/`COUNT` field (blank lines may appear inside a record, as in the
    /// RFC 5869 file); a run of `[…]` lines replaces the section headers.
    static func parse(_ text: String) -> [VectorRecord] {
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

struct HexError: Error, CustomStringConvertible {
    let text: String
    var description: String { "not hex: \(text)" }
}

func hexBytes(_ text: String) throws -> [UInt8] {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { throw HexError(text: text) }
    func nibble(_ c: UInt8) throws -> UInt8 {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: throw HexError(text: text)
        }
    }
    return try stride(from: 0, to: digits.count, by: 2).map { try nibble(digits[$0]) << 4 | nibble(digits[$0 + 1]) }
}

extension Array where Element == UInt8 {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}
