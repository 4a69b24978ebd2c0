import VaultFormat

/// What an observer of a storage sees, without any pattern (`dotsafe audit`): the file count
/// and its step, sizes and names, each feature's spread and histogram, and a verdict per
/// feature. Pure: it works on a `StorageScan`.
public struct MetadataAudit: Sendable {
    public enum Verdict: String, Sendable {
        /// The same for every file, or no structure found: tells an observer nothing.
        case hides
        /// Times fall into bursts of files made or changed together: dates the sessions.
        case bursts
        /// Follows the order in which files were made: ranks files by age.
        case creationOrder = "creation order"
        /// Some files were read after their last change: shows which were used.
        case reads
        /// Some files lie in more pieces on the disk than others: shows how they were written.
        case pieces
    }

    public struct Field: Sendable {
        public var feature: MetadataFeature
        public var minimum: Double
        public var maximum: Double
        public var distinct: Int
        /// File counts in `MetadataAudit.bins` equal slices of [minimum, maximum].
        public var histogram: [Int]
        /// Bursts of ≥ 2 files within 1 s of each other (time fields only).
        public var bursts: [Burst]
        public var verdict: Verdict
        public var detail: String
    }

    public static let bins = 16

    public var fileCount: Int
    public var countIsMultipleOf16: Bool { fileCount % Format.groupSize == 0 }
    public var sizes: [Int64: Int]
    public var otherEntries: Int
    public var fields: [Field]
    public var fileSystem: FileSystemLimits

    public init(scan: StorageScan) {
        fileCount = scan.files.count
        otherEntries = scan.otherEntries
        sizes = scan.files.reduce(into: [:]) { $0[$1.metadata.size, default: 0] += 1 }
        fileSystem = FileSystemLimits(type: scan.fileSystemType)
        // What "creation order" is measured against: birth time, else change time.
        let age = scan.files.map { MetadataFeature.btime.value(of: $0) ?? MetadataFeature.ctime.value(of: $0)! }
        fields = MetadataFeature.allCases.compactMap { feature in
            let values = scan.files.compactMap(feature.value)
            guard values.count == scan.files.count, let low = values.min(), let high = values.max() else { return nil }
            return Self.field(feature, values: values, low: low, high: high, age: age)
        }
    }

    static func field(_ feature: MetadataFeature, values: [Double], low: Double, high: Double, age: [Double]) -> Field {
        var histogram = [Int](repeating: 0, count: bins)
        for value in values {
            let bin = high == low ? 0 : Int((value - low) / (high - low) * Double(bins))
            histogram[min(bin, bins - 1)] += 1
        }
        let distinct = Set(values).count
        var field = Field(feature: feature, minimum: low, maximum: high, distinct: distinct, histogram: histogram,
                          bursts: [], verdict: .hides, detail: "the same for every file")
        guard distinct > 1 else { return field }
        field.detail = "no structure found"
        if feature.isTime {
            field.bursts = Burst.find(values.map { (time: $0, label: nil) })
            if field.bursts.count > 1 {
                field.verdict = .bursts
                field.detail = "\(field.bursts.count) bursts of files within 1 s (largest \(field.bursts.map(\.size).max()!)): when the storage was written"
            }
        } else if feature == .atimeAfterMtime {
            let read = values.filter { $0 == 1 }.count
            field.verdict = .reads
            field.detail = "\(read) of \(values.count) files were read after their last change"
        } else if feature == .extents {
            let split = values.filter { $0 > low }.count
            field.verdict = .pieces
            field.detail = "\(split) of \(values.count) files lie in more pieces on the disk than the rest: written another way"
        } else if feature == .inode || feature == .order || feature == .block {
            let correlation = Separation.rankCorrelation(values, age)
            if abs(correlation) >= 0.5 {
                field.verdict = .creationOrder
                field.detail = "rank correlation \(correlation.fixed(2)) with the files' age"
            }
        }
        return field
    }
}

/// What a file system records that no program can set, by its statfs magic number.
public struct FileSystemLimits: Sendable {
    public var name: String
    public var cannotHide: [String]

    public init(type: UInt64) {
        let common = "ctime: set to now by the kernel at every change, never set back"
        switch type {
        case 0xEF53:
            name = "ext4"
            cannotHide = ["birth time: set when a file is made, never changed", common,
                          "inode numbers: given out as files are made (a freed number goes to the next new file)",
                          "where a file's blocks lie on the disk: taken as files are written",
                          "listing order: a hash of the name (tells nothing)"]
        case 0x0102_1994:
            name = "tmpfs"
            cannotHide = ["birth time: set when a file is made, never changed", common,
                          "inode numbers: grow with every file made",
                          "listing order: newest file first"]
        case 0x9123_683E:
            name = "btrfs"
            cannotHide = ["birth time: set when a file is made, never changed", common,
                          "inode numbers: grow with every file made"]
        case 0x5846_5342:
            name = "xfs"
            cannotHide = ["birth time: set when a file is made, never changed", common,
                          "inode numbers: follow where and when files are made"]
        default:
            name = "file system type 0x" + String(type, radix: 16)
            cannotHide = [common, "assume birth time and inode numbers record when each file was made"]
        }
        cannotHide.append("re-creating a file (same bytes) is the only way to move its birth time, ctime and inode")
    }
}
