import Glibc

/// The controlling terminal (/dev/tty), for asking a secret: it is read there rather than from
/// standard input, which may be a pipe. While echo is off, SIGINT, SIGTERM, SIGHUP and SIGQUIT
/// first put the terminal back as it was, then end the process as they would have (a shell
/// left without echo after Ctrl-C is the bug this prevents).
public final class Terminal {
    private let descriptor: Int32

    public enum Line: Equatable { case bytes(Int), end, tooLong }

    init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { SystemCall.close(descriptor) }

    /// The process's controlling terminal; nil when it has none (a daemon, a cron job, `setsid`).
    public static func controlling() -> Terminal? {
        guard let fd = try? SystemCall.open("/dev/tty", O_RDWR | O_NOCTTY), isatty(fd) == 1 else { return nil }
        return Terminal(descriptor: fd)
    }

    public func write(_ text: String) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeBytes { try? SystemCall.writeAll(descriptor, $0) }
        bytes.removeAll()
    }

    /// Shows `prompt` and reads one line into `buffer` with echo off; the caller owns (and
    /// wipes) the buffer. Echo goes off before the prompt shows: what is typed at its first
    /// sight is neither shown nor thrown away by the flush (SecretPromptEchoTests).
    public func readSecretLine(prompt: String, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Line {
        var saved = termios()
        try SystemCall.retrying("tcgetattr") { tcgetattr(descriptor, &saved) }
        TerminalRestore.arm(descriptor: descriptor, settings: saved)
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        try SystemCall.retrying("tcsetattr") { tcsetattr(descriptor, TCSAFLUSH, &quiet) }
        defer {
            _ = tcsetattr(descriptor, TCSAFLUSH, &saved)
            TerminalRestore.disarm()
            write("\n")
        }
        write(prompt)
        var count = 0
        while let byte = try SystemCall.readByte(descriptor) {
            if byte == 0x0a { break }
            if count == buffer.count { return drain() }
            buffer[count] = byte
            count += 1
        }
        if count > 0 && buffer[count - 1] == 0x0d { count -= 1 }
        return .bytes(count)
    }

    /// Reads the rest of an overlong line, so it does not reach the shell.
    private func drain() -> Line {
        while let byte = try? SystemCall.readByte(descriptor), byte != 0x0a {}
        return .tooLong
    }
}

/// What a signal handler needs to put the terminal back: set before the handlers are installed,
/// read only by them. Plain pointers, allocated once, so the handler touches no Swift runtime
/// state (only tcsetattr, write, signal and raise, which are async-signal-safe).
private enum TerminalRestore {
    nonisolated(unsafe) static let descriptor = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    nonisolated(unsafe) static let settings = UnsafeMutablePointer<termios>.allocate(capacity: 1)
    nonisolated(unsafe) static let previous = UnsafeMutablePointer<sigaction>.allocate(capacity: 4)
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    static func arm(descriptor fd: Int32, settings saved: termios) {
        descriptor.pointee = fd
        settings.pointee = saved
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in
            _ = tcsetattr(TerminalRestore.descriptor.pointee, TCSANOW, TerminalRestore.settings)
            var newline: UInt8 = 0x0a
            _ = write(TerminalRestore.descriptor.pointee, &newline, 1)
            signal(number, SIG_DFL)
            raise(number)
        }
        sigemptyset(&action.sa_mask)
        for (index, number) in signals.enumerated() { sigaction(number, &action, previous + index) }
    }

    static func disarm() {
        for (index, number) in signals.enumerated() { sigaction(number, previous + index, nil) }
    }
}
