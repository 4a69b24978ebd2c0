import Foundation
import VaultStore

/// `dotsafe audit`'s output: an aligned table with small histograms for people, or JSON.
struct AuditReport {
    let storage: String
    let audit: MetadataAudit

    static let levels = Array(" ▁▂▃▄▅▆▇█")

    func text() -> String {
        var lines: [String] = []
        let step = audit.countIsMultipleOf16 ? "a multiple of 16" : "NOT a multiple of 16"
        lines.append("Storage \(storage) on \(audit.fileSystem.name): \(audit.fileCount) storage files (\(step)), \(audit.otherEntries) other entries ignored.")
        lines.append("Sizes: " + audit.sizes.sorted { $0.key < $1.key }.map { "\($0.value) files of \($0.key) bytes" }.joined(separator: ", ") + ".")
        lines.append("Names: 26 random-looking base32 characters, no extension (every storage file).")
        lines.append("")
        let rows = [["field", "lowest", "highest", "distinct", "histogram", "verdict"]] + audit.fields.map { field in
            [field.feature.rawValue, Self.format(field.minimum, field.feature), Self.format(field.maximum, field.feature),
             String(field.distinct), Self.sparkline(field.histogram), "\(field.verdict.rawValue): \(field.detail)"]
        }
        let widths = (0..<5).map { column in rows.map { $0[column].count }.max()! }
        for row in rows {
            lines.append((0..<5).map { row[$0] + String(repeating: " ", count: widths[$0] - row[$0].count) }.joined(separator: "  ") + "  " + row[5])
        }
        lines.append("")
        lines.append("What \(audit.fileSystem.name) records that no program can set:")
        lines += audit.fileSystem.cannotHide.map { "  - " + $0 }
        return lines.joined(separator: "\n") + "\n"
    }

    func json() throws -> String {
        let fields: [[String: Any]] = audit.fields.map { field in
            ["field": field.feature.rawValue, "min": field.minimum, "max": field.maximum, "distinct": field.distinct,
             "histogram": field.histogram, "bursts": field.bursts.map(\.size), "verdict": field.verdict.rawValue,
             "detail": field.detail]
        }
        let object: [String: Any] = [
            "storage": storage, "fileSystem": audit.fileSystem.name, "files": audit.fileCount,
            "multipleOf16": audit.countIsMultipleOf16, "otherEntries": audit.otherEntries,
            "sizes": Dictionary(uniqueKeysWithValues: audit.sizes.map { (String($0.key), $0.value) }),
            "fields": fields, "cannotHide": audit.fileSystem.cannotHide,
        ]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// One character per bin, its height relative to the fullest bin.
    static func sparkline(_ histogram: [Int]) -> String {
        let top = max(histogram.max() ?? 0, 1)
        // Any file at all shows at least the lowest block, so a single outlier stays visible.
        return String(histogram.map { levels[$0 == 0 ? 0 : max(1, ($0 * 8 + top - 1) / top)] })
    }

    /// Times as UTC dates, time differences in seconds, everything else as whole numbers.
    static func format(_ value: Double, _ feature: MetadataFeature) -> String {
        if feature.isTime {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.string(from: Date(timeIntervalSince1970: value))
        }
        switch feature {
        case .ctimeMinusMtime, .atimeMinusMtime, .mtimeMinusBtime, .ctimeMinusBtime: return value.fixed(3) + " s"
        case .mode: return "0" + String(Int(value), radix: 8)
        default: return String(Int64(value))
        }
    }
}
