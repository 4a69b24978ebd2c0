import Foundation
import Testing

/// One record of a vector file: `NAME = VALUE` fields from a `COUNT` line to the next.
struct VectorRecord: CustomStringConvertible, Sendable {
    var fields: [String: String] = [:]
    var line = 0

    func string(_ name: String) throws -> String {
        try #require(fields[name], "field \(name) missing in record at line \(line)")
    }

    func hex(_ name: String) throws -> [UInt8] { try hexBytes(string(name)) }

    func int(_ name: String) throws -> Int {
        try #require(Int(string(name)), "field \(name) is not an integer at line \(line)")
    }

    var description: String { "record at line \(line)" }
}

/// Reader for the vector files of docs/FORMAT.md §10: `#` comments, records that start at a
/// `COUNT` line, `NAME = VALUE` fields (hex unless the file's header says otherwise).
enum VectorFile {
    static var folder: URL {
        get throws { try #require(Bundle.module.url(forResource: "Vectors", withExtension: nil)) }
    }

    static func text(_ name: String) throws -> String {
        try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
    }

    static func load(_ name: String) throws -> [VectorRecord] { parse(try text(name)) }

    static func parse(_ text: String) -> [VectorRecord] {
        var records: [VectorRecord] = []
        var current: VectorRecord?
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let name = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if name == "COUNT" {
                if let record = current { records.append(record) }
                current = VectorRecord(line: number + 1)
            }
            current?.fields[name] = value
        }
        if let record = current { records.append(record) }
        return records
    }

    /// Where the committed vectors live in the source tree, for regenerating a Swift-made one.
    static func sourcePath(_ name: String, file: String = #filePath) -> String {
        URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent("Vectors/\(name)").path
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
        default: throw HexError(text: text)
        }
    }
    return try stride(from: 0, to: digits.count, by: 2).map { try nibble(digits[$0]) << 4 | nibble(digits[$0 + 1]) }
}

extension Array where Element == UInt8 {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}
