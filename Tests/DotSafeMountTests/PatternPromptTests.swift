import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// The pattern prompt, driven through a real pseudo-terminal (tmux running dash, whose lack of
/// line editing leaves the terminal exactly as the last program did): the grid is drawn, the
/// pattern is read from the terminal without echo even when standard input is redirected, and
/// Ctrl-C, SIGTERM and SIGHUP at the prompt leave the terminal with echo on.
@Suite(.serialized) struct PatternPromptTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    /// A tmux server of its own with one pane running /bin/sh.
    final class Pane {
        let h: MountHarness
        let socket: String

        init(_ h: MountHarness) throws {
            self.h = h
            socket = h.base + "/tmux.sock"
            // Not through Foundation's Process: it learns that a child ended from a descriptor the
            // child inherits, and the tmux server (which stays) keeps that open.
            let arguments = ["tmux", "-S", socket, "new-session", "-d", "-x", "100", "-y", "50", "/bin/sh"]
            let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
            let environment: [UnsafeMutablePointer<CChar>?] = h.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { (argv + environment).forEach { free($0) } }
            var pid = pid_t()
            guard posix_spawn(&pid, "/usr/bin/tmux", nil, nil, argv, environment) == 0 else { throw HarnessError("cannot start tmux") }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            guard status == 0 else { throw HarnessError("tmux new-session: status \(status)") }
        }

        func type(_ keys: String, enter: Bool = true) {
            h.run("/usr/bin/tmux", ["-S", socket, "send-keys", "-l", keys], input: nil)
            if enter { h.run("/usr/bin/tmux", ["-S", socket, "send-keys", "Enter"], input: nil) }
        }

        func press(_ key: String) { h.run("/usr/bin/tmux", ["-S", socket, "send-keys", key], input: nil) }

        var screen: String { h.run("/usr/bin/tmux", ["-S", socket, "capture-pane", "-p", "-S", "-200"], input: nil).output }

        /// Waits up to 10 s for `text` on the screen.
        func waitFor(_ text: String) -> Bool {
            for _ in 0..<200 {
                if screen.contains(text) { return true }
                usleep(50_000)
            }
            return false
        }

        /// `stty -a` in this pane, as its tokens.
        func terminalSettings() -> [String] {
            let file = h.base + "/stty-\(UUID().uuidString.prefix(6))"
            type("stty -a > \(file)")
            for _ in 0..<200 where (try? String(contentsOfFile: file, encoding: .utf8))?.contains("echo") != true { usleep(50_000) }
            let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
            return text.split { $0 == " " || $0 == "\n" || $0 == ";" }.map(String.init)
        }

        /// Ends the server. `kill-server` and a `pkill` (SIGTERM) by its command line left every
        /// server running (5 per suite run, counted with `pgrep tmux`; a SIGTERM by hand did not
        /// end them either): its own pid, asked for while it runs, gets SIGTERM, then SIGKILL.
        func close() {
            let pid = h.run("/usr/bin/tmux", ["-S", socket, "display-message", "-p", "#{pid}"], input: nil).output
            h.run("/usr/bin/tmux", ["-S", socket, "kill-server"], input: nil)
            if let pid = pid_t(pid.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 1 {
                kill(pid, SIGTERM)
                for _ in 0..<100 where kill(pid, 0) == 0 { usleep(20_000) }
                if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
            }
        }
    }

    func mountCommand(_ h: MountHarness, _ vault: String) -> String {
        "env DOTSAFE_KEYRING=\(h.environment["DOTSAFE_KEYRING"]!) DOTSAFE_ALLOW_WEAK_KDF=1 DOTSAFE_KDF_ROUNDS=1000 \(MountHarness.binary) mount \(h.storage) \(vault) < /dev/null"
    }

    @Test func drawsTheGridAndReadsThePatternFromTheTerminal() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let pane = try Pane(h)
        defer { pane.close() }
        let vault = try h.mountPoint()
        defer { if MountHarness.isMounted(vault) { h.dotsafe(["lock", vault]) } }
        pane.type(mountCommand(h, vault))
        try #require(pane.waitFor("Pattern:"), "no prompt:\n\(pane.screen)")
        let screen = pane.screen
        #expect(screen.contains("      a   b   c   d   e\n"))
        for row in 1...5 { #expect(screen.contains("  \(row)   ·   ·   ·   ·   ·\n")) }
        pane.type(Self.pattern)
        try #require(pane.waitFor("Mounted the vault at \(vault)"), "not mounted:\n\(pane.screen)")
        #expect(MountHarness.isMounted(vault))
        let promptLines = pane.screen.split(separator: "\n").filter { $0.hasPrefix("Pattern:") }
        #expect(promptLines == ["Pattern:"], "the pattern was echoed: \(promptLines)")
        #expect(pane.terminalSettings().contains("echo"))
        // The pattern typed at the prompt opens the same vault as the one given on standard input.
        h.sh("echo typed > t.txt", in: vault)
        #expect(h.dotsafe(["lock", vault]).status == 0)
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("test \"$(cat t.txt)\" = typed", in: vault)
        #expect(h.lock(vault).status == 0)
    }

    @Test(arguments: ["C-c", "TERM", "HUP"])
    func anInterruptedPromptLeavesEchoOn(_ way: String) throws {
        let h = try MountHarness()
        defer { h.finish() }
        let pane = try Pane(h)
        defer { pane.close() }
        // The check can fail: echo turned off is seen as such.
        pane.type("stty -echo")
        #expect(pane.terminalSettings().contains("-echo"))
        pane.type("stty echo")
        let vault = try h.mountPoint()
        pane.type(mountCommand(h, vault))
        try #require(pane.waitFor("Pattern:"), "no prompt:\n\(pane.screen)")
        if way == "C-c" {
            pane.press("C-c")
        } else {
            let pid = try #require(MountHarness.daemonPID(for: vault))
            kill(pid, way == "TERM" ? SIGTERM : SIGHUP)
        }
        for _ in 0..<100 where MountHarness.daemonPID(for: vault) != nil { usleep(50_000) }
        #expect(MountHarness.daemonPID(for: vault) == nil, "dotsafe is still asking")
        let settings = pane.terminalSettings()
        #expect(settings.contains("echo") && !settings.contains("-echo"), "\(settings)")
        #expect(!MountHarness.isMounted(vault))
    }
}
