import Glibc

/// The process's own argv, read once at start. A pattern given with `--pattern P` is copied out
/// and its bytes in argv are overwritten, so it does not stay readable in /proc/PID/cmdline
/// (R-PAT-4); the command line the parser sees holds `PatternArgument.placeholder` instead.
enum ArgumentVector {
    static func takeArguments() -> (arguments: [String], pattern: [UInt8]?) {
        var arguments: [String] = []
        var pattern: [UInt8]?
        let argv = CommandLine.unsafeArgv
        var index = 1
        var optionsEnded = false
        while index < Int(CommandLine.argc) {
            guard let raw = argv[index] else { break }
            let argument = String(cString: raw)
            if optionsEnded {
                arguments.append(argument)
            } else if argument == "--" {
                optionsEnded = true
                arguments.append(argument)
            } else if argument == "--pattern", index + 1 < Int(CommandLine.argc), let value = argv[index + 1] {
                pattern = scrub(value)
                arguments += [argument, PatternArgument.placeholder]
                index += 1
            } else if argument.hasPrefix("--pattern=") {
                pattern = scrub(raw + "--pattern=".utf8.count)
                arguments.append("--pattern=" + PatternArgument.placeholder)
            } else {
                arguments.append(argument)
            }
            index += 1
        }
        return (arguments, pattern)
    }

    /// Copies a C string out and overwrites it in place.
    private static func scrub(_ text: UnsafeMutablePointer<CChar>) -> [UInt8] {
        let count = strlen(text)
        let bytes = (0..<count).map { UInt8(bitPattern: text[$0]) }
        memset(text, 0x2a, count)  // '*': the argument keeps its length, its bytes are gone
        return bytes
    }
}

/// Where `mount` finds a pattern taken from argv: the parser only ever sees the placeholder.
public enum PatternArgument {
    public static let placeholder = "\u{1}pattern-from-argv"
}
