import VaultCore
import VaultCrypto

/// The pattern options that `mount` and `fsck` share, and reading the pattern they choose
/// (R-PAT-4): from argv (already taken out of it, in locked memory), from one line of standard
/// input, or by asking on the terminal (`PatternPrompt`). Prints the hints of a weak pattern
/// (R-PAT-3). The bytes are parsed once, straight into the `Pattern`'s locked memory.
struct PatternReader {
    enum Source: Equatable { case argument(String), standardInput, prompt }

    static let pattern = OptionSpec.value("pattern", placeholder: "P", help: "The pattern, like b2-c2-d3-d4-c4-b4-a5.")
    static let patternStdin = OptionSpec.flag("pattern-stdin", help: "Read the pattern as one line from standard input.")
    static let options = [pattern, patternStdin]

    let source: Source

    init(source: Source) { self.source = source }

    /// The source the command line chose; neither option means asking on the terminal.
    init(parsing arguments: ParsedArguments) throws {
        if let value = arguments.value(Self.pattern) {
            guard !arguments.flag(Self.patternStdin) else { throw CLIError.usage("--pattern and --pattern-stdin exclude each other") }
            source = .argument(value)
        } else {
            source = arguments.flag(Self.patternStdin) ? .standardInput : .prompt
        }
    }

    func read(_ context: CommandContext) throws -> Pattern {
        let pattern: Pattern
        switch source {
        case .argument(PatternArgument.placeholder):
            guard let secret = context.patternFromArguments else { throw CLIError.failure("no pattern given") }
            pattern = try Self.parse { try secret.withUnsafeBytes { try Pattern(parsing: $0) } }
        case .argument(let value):
            // Only an in-process caller (a test) hands over a pattern as text.
            pattern = try Self.parse { try Pattern(parsing: value) }
        case .standardInput:
            guard var line = try context.standardInput.readLine(prompt: nil, secret: true) else {
                throw CLIError.failure("no pattern on standard input")
            }
            defer { line.wipe() }
            pattern = try Self.parse { try Pattern(parsing: line) }
        case .prompt:
            pattern = try PatternPrompt.ask()
        }
        for hint in pattern.hints { context.standardError.writeLine("hint: \(hint)") }
        if pattern.pointCount < Pattern.recommendedPoints {
            let count = Pattern.count(ofLengthAtMost: pattern.pointCount)
            // One PBKDF2 of 600,000 rounds takes about 0.3 s on one core (PLATFORM-NOTES.md).
            let hours = Double(count) * 0.3 / 3600
            let effort = hours < 1 ? "\(Int(hours * 60) + 1) minutes" : "\(Int(hours.rounded(.up))) hours"
            context.standardError.writeLine("hint: only \(count) patterns have \(pattern.pointCount) points or fewer: with your keyring, one computer tries them all in about \(effort)")
        }
        return pattern
    }

    /// Turns a refusal into the one-line message.
    static func parse(_ body: () throws -> Pattern) throws -> Pattern {
        do { return try body() } catch let error as PatternError {
            throw CLIError.failure("invalid pattern: \(error)")
        }
    }
}
