/// The measure of R-DEN-1 for a storage whose files' owners are known (a test knows the
/// patterns): for every feature, how well it separates one class of files (the hidden vault's)
/// from another (the covers `init` made), and every burst of times made of one vault's files.
public struct MetadataSeparation: Sendable {
    public struct Row: Sendable {
        public var feature: MetadataFeature
        /// max(AUC, 1 − AUC); nil where the file system lacks the feature.
        public var auc: Double?
    }

    public struct VaultBurst: Sendable {
        public var feature: MetadataFeature
        public var burst: Burst
        public var label: Int
    }

    public var rows: [Row]
    /// Bursts of at least 2 files, 90 % or more from one class in `vaults`.
    public var vaultBursts: [VaultBurst]
    public var positives: Int
    public var negatives: Int

    /// `labels` maps file names to classes; files of class `hidden` are compared with files of
    /// class `covers`; bursts count against any class in `vaults`.
    public init(scan: StorageScan, labels: [String: Int], hidden: Int, covers: Int, vaults: Set<Int>) {
        let positiveFiles = scan.files.filter { labels[$0.name] == hidden }
        let negativeFiles = scan.files.filter { labels[$0.name] == covers }
        positives = positiveFiles.count
        negatives = negativeFiles.count
        rows = MetadataFeature.allCases.map { feature in
            let p = positiveFiles.compactMap(feature.value), n = negativeFiles.compactMap(feature.value)
            return Row(feature: feature, auc: p.isEmpty || n.isEmpty ? nil : Separation.symmetricAUC(positives: p, negatives: n))
        }
        vaultBursts = MetadataFeature.times.flatMap { feature -> [VaultBurst] in
            let times = scan.files.compactMap { file in feature.value(of: file).map { (time: $0, label: labels[file.name]) } }
            return Burst.find(times).compactMap { burst in
                guard case .some(.some(let label)) = burst.dominantLabel(), vaults.contains(label) else { return nil }
                return VaultBurst(feature: feature, burst: burst, label: label)
            }
        }
    }

    /// The best-separating feature.
    public var worst: Row { rows.filter { $0.auc != nil }.max { $0.auc! < $1.auc! }! }

    /// Features whose AUC exceeds `limit`.
    public func failing(above limit: Double) -> [Row] { rows.filter { ($0.auc ?? 0) > limit } }

    /// An aligned table: one feature a line, then the vault bursts per time field.
    public var table: String {
        var lines = ["feature        AUC (hidden \(positives) vs covers \(negatives))"]
        for row in rows {
            lines.append(row.feature.rawValue.padded(15) + (row.auc.map { $0.fixed(3) } ?? "-"))
        }
        for feature in MetadataFeature.times {
            let bursts = vaultBursts.filter { $0.feature == feature }
            guard !bursts.isEmpty else { continue }
            let described = bursts.map { "vault \($0.label): \($0.burst.size) files" }.joined(separator: ", ")
            lines.append("\(feature.rawValue) bursts of one vault: \(described)")
        }
        return lines.joined(separator: "\n")
    }
}

extension String {
    func padded(_ width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }
    func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}

extension Double {
    /// The value with `digits` decimals, without Foundation's formatter.
    public func fixed(_ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = Int((abs(self) * scale).rounded()), unit = Int(scale)
        let fraction = String(scaled % unit)
        let sign = self < 0 && scaled != 0 ? "-" : ""
        return digits == 0 ? "\(sign)\(scaled)" : "\(sign)\(scaled / unit)." + String(repeating: "0", count: digits - fraction.count) + fraction
    }
}
