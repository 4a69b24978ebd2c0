import Glibc
import SystemCalls

/// Where commands read patterns and passphrases: standard input, with echo off on a terminal.
/// Tests substitute `ScriptedInput`. Lines come back as bytes so that callers can wipe them.
public protocol LineInput: Sendable {
    /// Whether a person is typing (a terminal), so a command may prompt.
    var isTerminal: Bool { get }
    /// One line without its line end, or nil at the end of input. `prompt` goes to standard
    /// error; with `secret` the terminal does not echo what is typed.
    func readLine(prompt: String?, secret: Bool) throws -> [UInt8]?
}

/// The process's standard input, its prompts on standard error.
public struct ProcessInput: LineInput {
    private let input: Int32, prompts: FileDescriptorOutput

    public init() { self.init(input: 0, prompts: 2) }

    /// Other descriptors than the standard ones: tests, on a pseudo-terminal of their own.
    init(input: Int32, prompts: Int32) {
        self.input = input
        self.prompts = prompts == 2 ? .standardError : FileDescriptorOutput(descriptor: prompts)
    }

    public var isTerminal: Bool { isatty(input) == 1 }

    public func readLine(prompt: String?, secret: Bool) throws -> [UInt8]? {
        var saved = termios()
        let hideEcho = secret && isTerminal && tcgetattr(input, &saved) == 0
        // Echo off before the prompt shows: what is typed at its first sight is neither shown
        // nor thrown away by the flush (SecretPromptEchoTests).
        if hideEcho {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(input, TCSAFLUSH, &quiet)
        }
        if let prompt { prompts.write(prompt) }
        defer {
            if hideEcho {
                tcsetattr(input, TCSAFLUSH, &saved)
                prompts.write("\n")
            }
        }
        // Byte by byte, so nothing past the line is taken from a pipe that others read on.
        var line: [UInt8] = []
        // Room for any pattern or passphrase up front: growing would leave unwiped copies behind.
        line.reserveCapacity(4096)
        while true {
            guard let byte = try? SystemCall.readByte(input) else { return line.isEmpty ? nil : line }
            if byte == 0x0a { break }
            line.append(byte)
        }
        if line.last == 0x0d { line.removeLast() }
        return line
    }
}

/// Lines given in advance, for tests.
public final class ScriptedInput: LineInput, @unchecked Sendable {
    // Only tests use it, from one thread at a time.
    private var lines: [[UInt8]]
    public let isTerminal: Bool
    public private(set) var prompts: [String] = []

    public init(_ lines: [String], isTerminal: Bool = false) {
        self.lines = lines.map { Array($0.utf8) }
        self.isTerminal = isTerminal
    }

    public func readLine(prompt: String?, secret: Bool) throws -> [UInt8]? {
        if let prompt { prompts.append(prompt) }
        return lines.isEmpty ? nil : lines.removeFirst()
    }
}
