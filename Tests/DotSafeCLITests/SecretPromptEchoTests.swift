@testable import DotSafeCLI
import DotSafeTestSupport
import Foundation
import Glibc
import Synchronization
@testable import SystemCalls
import Testing

/// A secret's prompt shows only once echo is off. The other way round, a person (or a test)
/// typing at the prompt's first sight has the pattern shown on the screen, and then thrown
/// away by the flush that turns echo off: the program waits for a line already typed (session
/// 48's RepatternTests.asksOnTheTerminal under load).
@Suite struct SecretPromptEchoTests {
    enum Reader: CaseIterable { case terminal, standardInput }

    /// Both readers: the pattern's (on /dev/tty) and standard input's (passphrases).
    @Test(arguments: Reader.allCases) func echoIsOffWhenThePromptShowsAndALineTypedAtOnceIsRead(_ reader: Reader) throws {
        for round in 0..<300 {
            let (master, path) = try TerminalProcess.pseudoTerminal()
            defer { close(master) }
            let slave = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
            let observer = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
            try #require(slave >= 0 && observer >= 0)
            defer { close(observer) }
            let read = SecretRead {
                switch reader {
                case .terminal:
                    let terminal = Terminal(descriptor: slave)
                    var buffer = [UInt8](repeating: 0, count: 64)
                    let outcome = buffer.withUnsafeMutableBytes { try? terminal.readSecretLine(prompt: "Secret: ", into: $0) }
                    guard case .bytes(let count)? = outcome else { return "\(String(describing: outcome))" }
                    return String(decoding: buffer[..<count], as: UTF8.self)
                case .standardInput:
                    defer { close(slave) }
                    let line = try? ProcessInput(input: slave, prompts: slave).readLine(prompt: "Secret: ", secret: true)
                    return line.map { String(decoding: $0, as: UTF8.self) } ?? "nil"
                }
            }
            // The instant the prompt arrives: echo must be off already, and the line typed
            // then must reach the reader.
            var shown: [UInt8] = []
            while !String(decoding: shown, as: UTF8.self).contains("Secret: ") { shown += try Self.readSome(master) }
            var settings = termios()
            try #require(tcgetattr(observer, &settings) == 0)
            let quiet = settings.c_lflag & tcflag_t(ECHO) == 0
            #expect(quiet, "round \(round): echo on while the prompt shows")
            _ = Array("b2-c2\n".utf8).withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
            let line = read.result()
            #expect(line == "b2-c2", "round \(round): read \(line)")
            var pending = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            while poll(&pending, 1, 0) == 1, pending.revents & Int16(POLLIN) != 0 { shown += try Self.readSome(master) }
            let echoed = String(decoding: shown, as: UTF8.self).contains("b2")
            #expect(!echoed, "round \(round): the secret was echoed")
            if !quiet || line != "b2-c2" || echoed { break }
        }
    }

    private static func readSome(_ descriptor: Int32) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = Glibc.read(descriptor, &buffer, buffer.count)
        try #require(count > 0, "the terminal closed")
        return Array(buffer[..<count])
    }
}

/// A secret read on a thread of its own, as the program would block in it.
private final class SecretRead: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let line = Mutex("")

    init(_ read: @escaping @Sendable () -> String) {
        Thread.detachNewThread { [self] in
            let text = read()
            line.withLock { $0 = text }
            done.signal()
        }
    }

    /// The line read; waits at most 10 s.
    func result() -> String {
        done.wait(timeout: .now() + 10) == .success ? line.withLock { $0 } : "nothing within 10 s"
    }
}
