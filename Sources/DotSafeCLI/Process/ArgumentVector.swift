import Glibc
import VaultCrypto

/// The process's own argv, read once at start. A pattern given with `--pattern P` is copied
/// from argv straight into locked memory and its bytes in argv are zeroed, so it does not stay
/// readable in /proc/PID/cmdline (R-PAT-4) and never becomes a `String` (which is also why
/// `CommandLine.arguments` is never used: it makes a `String` of every argument). The command
/// line the parser sees holds `PatternArgument.placeholder` instead.
enum ArgumentVector {
    static func takeArguments() -> (arguments: [String], pattern: SecretBytes?) {
        var arguments: [String] = []
        var pattern: SecretBytes?
        let argv = CommandLine.unsafeArgv
        let count = Int(CommandLine.argc)
        let option = "--pattern"
        var index = 1
        while index < count, let raw = argv[index] {
            if strcmp(raw, "--") == 0 {
                // Everything after "--" is an operand, never a pattern.
                arguments += (index..<count).compactMap { argv[$0].map { String(cString: $0) } }
                break
            } else if strcmp(raw, option) == 0, index + 1 < count, let value = argv[index + 1] {
                pattern = take(value)
                arguments += [option, PatternArgument.placeholder]
                index += 1
            } else if strncmp(raw, option + "=", option.utf8.count + 1) == 0 {
                pattern = take(raw + option.utf8.count + 1)
                arguments.append(option + "=" + PatternArgument.placeholder)
            } else {
                arguments.append(String(cString: raw))
            }
            index += 1
        }
        return (arguments, pattern)
    }

    /// Copies a C string into locked memory and zeroes it in place.
    private static func take(_ text: UnsafeMutablePointer<CChar>) -> SecretBytes? {
        let bytes = UnsafeMutableRawBufferPointer(start: text, count: strlen(text))
        defer { SecureZero.wipe(bytes) }
        return try? SecretBytes(copying: UnsafeRawBufferPointer(bytes))
    }
}

/// Where `mount` finds a pattern taken from argv: the parser only ever sees the placeholder.
public enum PatternArgument {
    public static let placeholder = "\u{1}pattern-from-argv"
}
