/// A length of time as people type it on a command line: `90` or `90s`, `5m`, `2h`.
enum DurationText {
    /// Seconds, or nil when `text` is not a positive number with an optional unit s, m or h.
    static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600]
        var number = Substring(text)
        var unit = 1.0
        if let last = number.last, let factor = units[last] {
            unit = factor
            number = number.dropLast()
        }
        guard let value = Double(number), value.isFinite, value > 0, (value * unit).isFinite else { return nil }
        return value * unit
    }
}
