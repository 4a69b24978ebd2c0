/// A run of files whose times lie close together: sorted by time, runs are split wherever two
/// neighbours are more than `gap` apart, and a run of at least two files is a burst (R-DEN-1).
/// A burst made of one vault's files dates that vault's session.
public struct Burst: Equatable, Sendable {
    /// Times in seconds.
    public var start: Double
    public var end: Double
    /// How many files of each class (label) the burst holds; unlabelled files count under nil.
    public var counts: [Int?: Int]

    public var size: Int { counts.values.reduce(0, +) }

    /// The label of at least `share` of the burst's files, if one has that many.
    public func dominantLabel(share: Double = 0.9) -> Int?? {
        guard let (label, count) = counts.max(by: { $0.value < $1.value }) else { return nil }
        return Double(count) >= share * Double(size) ? .some(label) : nil
    }

    /// The bursts among `times` (seconds), each time with its file's label.
    public static func find(_ times: [(time: Double, label: Int?)], gap: Double = 1.0, minimumSize: Int = 2) -> [Burst] {
        let sorted = times.sorted { $0.time < $1.time }
        var bursts: [Burst] = []
        var current: Burst?
        for entry in sorted {
            if var run = current, entry.time - run.end <= gap {
                run.end = entry.time
                run.counts[entry.label, default: 0] += 1
                current = run
                continue
            }
            if let run = current, run.size >= minimumSize { bursts.append(run) }
            current = Burst(start: entry.time, end: entry.time, counts: [entry.label: 1])
        }
        if let run = current, run.size >= minimumSize { bursts.append(run) }
        return bursts
    }
}
