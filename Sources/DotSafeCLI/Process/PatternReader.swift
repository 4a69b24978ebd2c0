import VaultCore

/// Gets the pattern for `mount` (R-PAT-4): from argv (already taken out of it), from one line of
/// standard input, or by asking on a terminal. Prints the hints of a weak pattern (R-PAT-3).
struct PatternReader {
    enum Source: Equatable { case argument(String), standardInput, prompt }

    let source: Source

    func read(_ context: CommandContext) throws -> Pattern {
        var bytes: [UInt8]
        switch source {
        case .argument(let value):
            bytes = value == PatternArgument.placeholder ? (context.patternFromArguments ?? []) : Array(value.utf8)
        case .standardInput:
            guard let line = try context.standardInput.readLine(prompt: nil, secret: true) else {
                throw CLIError.failure("no pattern on standard input")
            }
            bytes = line
        case .prompt:
            guard context.standardInput.isTerminal else {
                throw CLIError.failure("no pattern given: use --pattern P, --pattern-stdin, or run on a terminal")
            }
            context.standardError.writeLine("Draw your pattern as points on the 5×5 grid: columns a-e, rows 1-5, e.g. b2-c2-d3-d4.")
            guard let line = try context.standardInput.readLine(prompt: "Pattern: ", secret: true) else {
                throw CLIError.failure("no pattern given")
            }
            bytes = line
        }
        defer { bytes.wipe() }
        let pattern: Pattern
        do { pattern = try Pattern(parsing: String(decoding: bytes, as: UTF8.self)) } catch {
            throw CLIError.failure("invalid pattern: \(error)")
        }
        for hint in pattern.hints { context.standardError.writeLine("hint: \(hint)") }
        if pattern.points.count < Pattern.recommendedPoints {
            let count = Pattern.count(ofLengthAtMost: pattern.points.count)
            // One PBKDF2 of 600,000 rounds takes about 0.3 s on one core (PLATFORM-NOTES.md).
            let hours = Double(count) * 0.3 / 3600
            let effort = hours < 1 ? "\(Int(hours * 60) + 1) minutes" : "\(Int(hours.rounded(.up))) hours"
            context.standardError.writeLine("hint: only \(count) patterns have \(pattern.points.count) points or fewer: with your keyring, one computer tries them all in about \(effort)")
        }
        return pattern
    }
}
