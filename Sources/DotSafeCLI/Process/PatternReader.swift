import VaultCore
import VaultCrypto

/// The pattern options that `mount` and `fsck` share, and reading the pattern they choose
/// (R-PAT-4): from argv (already taken out of it, in locked memory), from one line of standard
/// input, from a file or a command (`UnattendedPattern`), or by asking on the terminal
/// (`PatternPrompt`). Prints the hints of a weak pattern
/// (R-PAT-3). The bytes are parsed once, straight into the `Pattern`'s locked memory.
struct PatternReader {
    enum Source: Equatable { case argument(String), standardInput, file(String), command(String), prompt }

    static let pattern = OptionSpec.value("pattern", placeholder: "P", help: "The pattern, like b2-c2-d3-d4-c4-b4-a5.")
    static let patternStdin = OptionSpec.flag("pattern-stdin", help: "Read the pattern as one line from standard input.")
    static let patternFile = OptionSpec.value("pattern-file", placeholder: "FILE",
                                              help: "Read the pattern from the first line of FILE (mode 600, yours).")
    static let patternCommand = OptionSpec.value("pattern-command", placeholder: "CMD",
                                                 help: "Run CMD with /bin/sh and read the pattern from its output.")
    static let options = [pattern, patternStdin, patternFile, patternCommand]

    let source: Source

    init(source: Source) { self.source = source }

    /// The source the command line chose; neither option means asking on the terminal.
    init(parsing arguments: ParsedArguments) throws {
        let given = Self.options.filter { arguments.flag($0) }
        guard given.count <= 1 else {
            throw CLIError.usage(given.map(\.displayName).joined(separator: " and ") + " exclude each other")
        }
        if let value = arguments.value(Self.pattern) {
            source = .argument(value)
        } else if let path = arguments.value(Self.patternFile) {
            source = .file(path)
        } else if let command = arguments.value(Self.patternCommand) {
            source = .command(command)
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
        case .file(let path):
            pattern = try UnattendedPattern.read(file: path)
        case .command(let command):
            pattern = try UnattendedPattern.read(command: command)
        case .prompt:
            pattern = try PatternPrompt.ask()
        }
        Self.printHints(pattern, to: context.standardError)
        return pattern
    }

    /// The hints of a weak pattern (R-PAT-3), on standard error.
    static func printHints(_ pattern: Pattern, to output: any TextOutput) {
        for hint in pattern.hints { output.writeLine("hint: \(hint)") }
        if pattern.pointCount < Pattern.recommendedPoints {
            let count = Pattern.count(ofLengthAtMost: pattern.pointCount)
            // One PBKDF2 of 600,000 rounds takes about 0.3 s on one core (PLATFORM-NOTES.md).
            let hours = Double(count) * 0.3 / 3600
            let effort = hours < 1 ? "\(Int(hours * 60) + 1) minutes" : "\(Int(hours.rounded(.up))) hours"
            output.writeLine("hint: only \(count) patterns have \(pattern.pointCount) points or fewer: with your keyring, one computer tries them all in about \(effort)")
        }
    }

    /// Turns a refusal into the one-line message.
    static func parse(_ body: () throws -> Pattern) throws -> Pattern {
        do { return try body() } catch let error as PatternError {
            throw CLIError.failure("invalid pattern: \(error)")
        }
    }
}
