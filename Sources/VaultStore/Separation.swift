/// How well one number separates two classes of files: the ROC AUC (the Mann–Whitney
/// statistic), the measure of R-DEN-1. 0.5 means the number tells nothing; 1 (or 0) means a
/// threshold on it sorts every file into its class.
public enum Separation {
    /// The probability that a random positive has a larger value than a random negative, ties
    /// counting one half. 0.5 when either class is empty.
    public static func auc(positives: [Double], negatives: [Double]) -> Double {
        guard !positives.isEmpty, !negatives.isEmpty else { return 0.5 }
        let all = (positives.map { ($0, true) } + negatives.map { ($0, false) }).sorted { $0.0 < $1.0 }
        // Ranks from 1, the average rank for a run of ties.
        var positiveRankSum = 0.0
        var start = 0
        while start < all.count {
            var end = start
            while end + 1 < all.count && all[end + 1].0 == all[start].0 { end += 1 }
            let rank = Double(start + end + 2) / 2
            for index in start...end where all[index].1 { positiveRankSum += rank }
            start = end + 1
        }
        let p = Double(positives.count), n = Double(negatives.count)
        return (positiveRankSum - p * (p + 1) / 2) / (p * n)
    }

    /// The AUC whichever side is larger: an observer may threshold either way.
    public static func symmetricAUC(positives: [Double], negatives: [Double]) -> Double {
        let value = auc(positives: positives, negatives: negatives)
        return max(value, 1 - value)
    }

    /// Spearman's rank correlation of two equally long lists (0 when either is constant).
    public static func rankCorrelation(_ x: [Double], _ y: [Double]) -> Double {
        precondition(x.count == y.count, "rank correlation of lists of one length")
        let rx = ranks(x), ry = ranks(y)
        let mx = rx.reduce(0, +) / Double(rx.count), my = ry.reduce(0, +) / Double(ry.count)
        var sxy = 0.0, sxx = 0.0, syy = 0.0
        for (a, b) in zip(rx, ry) {
            sxy += (a - mx) * (b - my)
            sxx += (a - mx) * (a - mx)
            syy += (b - my) * (b - my)
        }
        return sxx == 0 || syy == 0 ? 0 : sxy / (sxx * syy).squareRoot()
    }

    static func ranks(_ values: [Double]) -> [Double] {
        let order = values.indices.sorted { values[$0] < values[$1] }
        var result = [Double](repeating: 0, count: values.count)
        var start = 0
        while start < order.count {
            var end = start
            while end + 1 < order.count && values[order[end + 1]] == values[order[start]] { end += 1 }
            for index in start...end { result[order[index]] = Double(start + end + 2) / 2 }
            start = end + 1
        }
        return result
    }
}
