import Foundation
import Glibc
import SystemCalls

/// A program run as a terminal runs it: the leader of a new session whose controlling terminal
/// is a fresh pseudo-terminal, alone in that terminal's foreground process group, with all three
/// standard streams on the terminal. `type("\u{03}")` is a user's Ctrl-C: the terminal, not the
/// test, sends SIGINT to the foreground group (and to nothing outside it).
public final class TerminalProcess: @unchecked Sendable {
    public let pid: pid_t
    private let master: Int32
    private let reader = DispatchSemaphore(value: 0)
    // Written by the reader thread until it signals `reader`; read after that only.
    private var received: [UInt8] = []

    /// TIOCSPTLCK and TIOCGPTN (asm-generic/ioctls.h, as on x86_64 and aarch64).
    private static let setLock: UInt = 0x4004_5431, getNumber: UInt = 0x8004_5430

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// A new pseudo-terminal: its master side (the caller closes it) and the other side's path.
    public static func pseudoTerminal() throws -> (master: Int32, path: String) {
        // posix_openpt, unlockpt and ptsname hide behind _XOPEN_SOURCE: what they do on Linux.
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var locked: Int32 = 0, number: UInt32 = 0
        guard master >= 0, ioctl(master, Self.setLock, &locked) == 0, ioctl(master, Self.getNumber, &number) == 0 else {
            let error = errno
            if master >= 0 { close(master) }
            throw Failure(description: "no pseudo-terminal: errno \(error)")
        }
        return (master, "/dev/pts/\(number)")
    }

    public init(_ program: String, _ arguments: [String], environment: [String: String]) throws {
        let (master, name) = try Self.pseudoTerminal()
        self.master = master
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Opened after setsid, without O_NOCTTY: it becomes the new session's controlling terminal.
        posix_spawn_file_actions_addopen(&actions, 0, name, O_RDWR, 0)
        posix_spawn_file_actions_adddup2(&actions, 0, 1)
        posix_spawn_file_actions_adddup2(&actions, 0, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var child = pid_t()
        // In a session of its own, as dotsafe starts rclone.
        let code = SpawnAttributes.withDefaultSignals(ownSession: true) { posix_spawn(&child, program, &actions, $0, argv, envp) }
        guard code == 0 else {
            close(master)
            throw Failure(description: "spawn \(program): error \(code)")
        }
        pid = child
        // Drained all along: a full terminal would stop the program's writes.
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(master, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                // EIO: every descriptor of the terminal's other side is closed.
                guard count > 0 else { break }
                received += buffer[..<count]
            }
            reader.signal()
        }
    }

    /// Writes `text` as typed on the terminal's keyboard.
    public func type(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
    }

    /// Waits at most `seconds` for the program to end: its exit status (nil when a signal ended
    /// it) and what it showed on the terminal; nil when it still runs, which is then killed.
    public func finish(seconds: Double) -> (status: Int32?, output: String)? {
        var status: Int32 = 0
        let ended = waitFor(seconds: seconds) { waitpid(pid, &status, WNOHANG) == pid }
        if !ended {
            kill(pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
        }
        // A process left holding the terminal would keep the reader waiting: not past the bound
        // (then the reader still owns what it read, and the terminal).
        let drained = reader.wait(timeout: .now() + seconds) == .success
        if drained { close(master) }
        guard ended else { return nil }
        return ((status & 0x7f) == 0 ? (status >> 8) & 0xff : nil,
                drained ? String(decoding: received, as: UTF8.self) : "(a process still holds the terminal)")
    }
}
