import SystemCalls
import VaultCore
import VaultCrypto

/// Asks for the pattern on the controlling terminal (/dev/tty, not standard input, which may be
/// a pipe): draws the 5×5 grid with its labels, reads one line with echo off into locked
/// memory, and parses it from there. Ctrl-C, SIGTERM and SIGHUP put the terminal back first
/// (`Terminal`).
enum PatternPrompt {
    static let grid = """
        Draw your pattern: points of this grid, each next to the one before
        (across, down or diagonal), written like b2-c2-d3-d4-c4-b4-a5.

              a   b   c   d   e
          1   ·   ·   ·   ·   ·
          2   ·   ·   ·   ·   ·
          3   ·   ·   ·   ·   ·
          4   ·   ·   ·   ·   ·
          5   ·   ·   ·   ·   ·


        """
    static let prompt = "Pattern: "
    /// Longer than any pattern written with spaces; a longer line is refused.
    static let lineLimit = 512

    /// `prompt`: what the line asks for; the grid is drawn above it unless `drawGrid` is false
    /// (a second question right after the first).
    static func ask(_ prompt: String = prompt, drawGrid: Bool = true) throws -> Pattern {
        guard let terminal = Terminal.controlling() else {
            throw CLIError.failure("no pattern given: use --pattern P, --pattern-stdin, or run on a terminal")
        }
        let buffer = try SecretBytes(count: lineLimit)
        defer { buffer.wipe() }
        let line: Terminal.Line
        do { line = try buffer.withUnsafeMutableBytes { try terminal.readSecretLine(prompt: (drawGrid ? grid : "") + prompt, into: $0) } } catch {
            throw CLIError.failure("cannot read the pattern from the terminal: \(error)")
        }
        switch line {
        case .end: throw CLIError.failure("no pattern given")
        case .tooLong: throw CLIError.failure("invalid pattern: longer than \(lineLimit) characters")
        case .bytes(let count):
            return try PatternReader.parse {
                try buffer.withUnsafeBytes { try Pattern(parsing: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            }
        }
    }
}
