/// A length of time as people type it on a command line: `90` or `90s`, `5m`, `2h`.
enum DurationText {
    /// The longest time accepted. Far beyond any sensible idle lock or sync interval, and small
    /// enough that every sum and conversion of it (status's `in 1000h 0m`) stays exact.
    static let maximumHours = 1000
    static var maximumSeconds: Double { Double(maximumHours) * 3600 }
    /// How the help and the messages name the maximum.
    static var maximumText: String { "\(maximumHours)h" }

    /// The seconds `text` gives `option`, at least `minimum`; otherwise a usage error that says
    /// what is wrong, `expected` being what the option takes ("a time such as 90s, 5m or 2h").
    static func seconds(_ text: String, for option: String, expected: String, minimum: Double = 0) throws(CLIError) -> Double {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600]
        var number = Substring(text)
        var unit = 1.0
        if let last = number.last, let factor = units[last] {
            unit = factor
            number = number.dropLast()
        }
        guard let value = Double(number), value.isFinite else { throw .usage("\(option) needs \(expected), not '\(text)'") }
        if number.hasPrefix("-") { throw .usage("\(option) needs \(expected), not '\(text)': a time cannot be negative") }
        // Compared before multiplying: 1e308h would be infinite seconds.
        guard value <= maximumSeconds / unit else { throw .usage("\(option) needs a time of at most \(maximumText), not '\(text)'") }
        guard value > 0, value * unit >= minimum else { throw .usage("\(option) needs \(expected), not '\(text)'") }
        return value * unit
    }
}
