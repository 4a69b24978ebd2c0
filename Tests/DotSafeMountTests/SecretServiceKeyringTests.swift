import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// The Secret Service keyring against a real GNOME Keyring on a private session bus (issue 15):
/// each test starts `gnome-keyring-daemon` under `dbus-run-session`, unlocked with a test
/// password (or left locked), and stops it; no mock. Every failure is one line, within about a
/// second, and changes nothing.
@Suite(.serialized) struct SecretServiceKeyringTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    /// Runs `body` (bash) inside `dbus-run-session` with a GNOME Keyring of its own, whose data
    /// lives in the harness folder, so a second session finds the first one's keyring.
    static func session(_ h: MountHarness, unlocked: Bool = true, busConfig: String? = nil, _ body: String) -> CommandResult {
        let start = unlocked
            ? "printf '%s' 'test password' | gnome-keyring-daemon --foreground --unlock --components=secrets >/dev/null 2>&1 &"
            : "gnome-keyring-daemon --foreground --components=secrets </dev/null >/dev/null 2>&1 &"
        let script = """
            export HOME='\(h.base)/home' XDG_DATA_HOME='\(h.base)/home/data' XDG_CONFIG_HOME='\(h.base)/home/config'
            export XDG_RUNTIME_DIR='\(h.base)/run'
            unset DISPLAY WAYLAND_DISPLAY
            mkdir -p "$HOME" "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
            \(busConfig == nil ? start : "true &")
            keyring_pid=$!
            bus_pid=$(dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \\
                org.freedesktop.DBus.GetConnectionUnixProcessID string:org.freedesktop.DBus | awk '/uint32/ { print $2 }')
            # The test runner's threads block SIGTERM, and children inherit that mask: the keyring
            # daemon and the bus would sit out a polite stop and outlive the test.
            stop_session() {
                kill -KILL $keyring_pid 2>/dev/null; wait $keyring_pid 2>/dev/null
                [ -n "$bus_pid" ] && kill -KILL $bus_pid 2>/dev/null; true
            }
            trap stop_session EXIT
            for i in $(seq 1 100); do
                [ -n '\(busConfig ?? "")' ] && break
                dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \\
                    org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true' && break
                sleep 0.05
            done
            dotsafe() { '\(MountHarness.binary)' "$@"; }
            # Milliseconds a command took, for the "within about a second" checks.
            timed() { local s=$(date +%s%N); "$@"; local status=$?; echo "took=$(( ($(date +%s%N) - s) / 1000000 ))"; return $status; }
            cd '\(h.base)'
            \(body)
            """
        let path = h.base + "/session-\(UUID().uuidString.prefix(6)).sh"
        FileManager.default.createFile(atPath: path, contents: Data(script.utf8))
        var configOption = ""
        if let busConfig {
            FileManager.default.createFile(atPath: h.base + "/bus.conf", contents: Data(busConfig.utf8))
            configOption = "--config-file='\(h.base)/bus.conf'"
        }
        // Output through files: nothing left running can hold the harness's pipes open.
        let status = h.run("/bin/sh", ["-c", "dbus-run-session \(configOption) -- /bin/bash '\(path)' > '\(path).out' 2> '\(path).err'"],
                           input: nil).status
        let read = { (name: String) in (try? String(contentsOfFile: path + name, encoding: .utf8)) ?? "" }
        // dbus-daemon's own complaints (fd limits, activation notes) are not the test's business.
        let error = read(".err").split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("dbus-daemon[") }.joined(separator: "\n")
        return CommandResult(status: status, output: read(".out"), error: error)
    }

    /// The lines DotSafe wrote (the session's other programs may add warnings of their own).
    static func dotsafeLines(_ error: String) -> String {
        error.split(separator: "\n").filter { $0.hasPrefix("dotsafe:") }.map { $0 + "\n" }.joined()
    }

    /// Milliseconds of every `took=` line.
    static func durations(_ output: String) -> [Int] {
        output.split(separator: "\n").compactMap { $0.hasPrefix("took=") ? Int($0.dropFirst(5)) : nil }
    }

    @Test func initMountAndMoveBothWays() throws {
        let h = try MountHarness(initialise: false)
        defer { h.finish() }
        let result = Self.session(h, """
            dotsafe --keyring secret-service init storage || echo "init failed"
            echo "record: $(grep -c dotsafe.keyring-backend keyring) salt-in-file: $(grep -c dotsafe.pattern-salt keyring)"
            echo "service: $(secret-tool lookup keyring default | head -c 8)"
            dotsafe keyring
            mkdir mnt
            echo '\(Self.pattern)' | dotsafe mount storage mnt --pattern-stdin && echo hello > mnt/a && dotsafe lock mnt
            dotsafe keyring move '\(h.base)/file-keyring'
            echo "after-move: service=$(secret-tool lookup keyring default | head -c 8) record=$(test -e keyring && echo yes || echo no)"
            export DOTSAFE_KEYRING='\(h.base)/file-keyring'
            dotsafe keyring
            dotsafe keyring move secret-service
            echo "back: service=$(secret-tool lookup keyring default | head -c 8) salt-in-file=$(grep -c dotsafe.pattern-salt file-keyring)"
            echo '\(Self.pattern)' | dotsafe mount storage mnt --pattern-stdin && cat mnt/a && dotsafe lock mnt
            """)
        let base = h.base
        #expect(result.error.contains("init failed") == false)
        let expected = [
            "Created storage storage with",
            "Created the keyring in the Secret Service (recorded in \(base)/keyring); keep a copy",
            "record: 1 salt-in-file: 0",
            "service: DSKEYRNG",
            "The keyring is in the Secret Service (recorded in \(base)/keyring).",
            "Pattern salt: PBKDF2-HMAC-SHA256, 1000 rounds.",
            "Moved the keyring to \(base)/file-keyring.",
            "after-move: service= record=no",
            "The keyring is the file \(base)/file-keyring.",
            "Moved the keyring to the Secret Service (recorded in \(base)/file-keyring).",
            "back: service=DSKEYRNG salt-in-file=0",
            "hello",
        ]
        var rest = Substring(result.output)
        for line in expected {
            guard let range = rest.range(of: line) else { Issue.record("missing '\(line)' in order:\n\(result)"); break }
            rest = rest[range.upperBound...]
        }
    }

    @Test func aLockedCollectionIsOneLineAndNothingChanges() throws {
        let h = try MountHarness(initialise: false)
        defer { h.finish() }
        let first = Self.session(h, "dotsafe --keyring secret-service init storage && mkdir mnt")
        try #require(first.status == 0, "\(first)")
        let record = FileManager.default.contents(atPath: h.base + "/keyring")
        let storage = try h.storageSnapshot()
        // A new session whose keyring daemon was not given the password: the login collection
        // stays locked, and without a display no prompt can be shown.
        let result = Self.session(h, unlocked: false, """
            timed dotsafe keyring
            timed dotsafe --keyring secret-service init storage2
            echo '\(Self.pattern)' | timed dotsafe mount storage mnt --pattern-stdin
            timed dotsafe keyring move '\(h.base)/moved'
            ls
            """)
        let locked = "dotsafe: the Secret Service's keyring is locked and could not be unlocked (no prompt can be shown here): unlock it in your desktop session, then try again"
        #expect(result.error.components(separatedBy: locked).count - 1 == 4, "\(result)")
        #expect(Self.durations(result.output).count == 4 && Self.durations(result.output).allSatisfy { $0 < 1500 }, "\(result)")
        #expect(!result.output.contains("storage2") && !result.output.contains("moved"))
        #expect(FileManager.default.contents(atPath: h.base + "/keyring") == record)
        #expect(try h.storageSnapshot() == storage)
        #expect(!MountHarness.isMounted(h.base + "/mnt"))
    }

    @Test func noSecretServiceOnTheBusIsOneLine() throws {
        let h = try MountHarness(initialise: false)
        defer { h.finish() }
        // A session bus that knows no Secret Service and cannot start one.
        let bus = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig><type>session</type><listen>unix:tmpdir=/tmp</listen>
            <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
            </busconfig>
            """
        let result = Self.session(h, busConfig: bus, "timed dotsafe --keyring secret-service init storage; ls")
        #expect(result.error.contains("dotsafe: no Secret Service answers on the session bus (is GNOME Keyring or KWallet running?): "), "\(result)")
        #expect(result.error.split(separator: "\n").filter { $0.hasPrefix("dotsafe:") }.count == 1)
        #expect(Self.durations(result.output).allSatisfy { $0 < 1500 } && !result.output.contains("storage") && !result.output.contains("keyring"))
    }

    @Test func aBusThatNeverAnswersTimesOut() throws {
        let h = try MountHarness(initialise: false)
        defer { h.finish() }
        // Accepts connections and never says a word: only the deadline ends the wait.
        let result = h.sh("""
            python3 -c 'import socket, time; s = socket.socket(socket.AF_UNIX); s.bind("hung.sock"); s.listen(8); time.sleep(20)' >/dev/null 2>&1 &
            listener=$!
            trap 'kill -KILL $listener' EXIT
            for i in $(seq 1 100); do [ -S hung.sock ] && break; sleep 0.05; done
            s=$(date +%s%N)
            DBUS_SESSION_BUS_ADDRESS="unix:path=$PWD/hung.sock" '\(MountHarness.binary)' --keyring secret-service init storage || true
            echo "took=$(( ($(date +%s%N) - s) / 1000000 ))"
            ls
            """)
        #expect(result.error == "dotsafe: the Secret Service did not answer within 3 seconds\n", "\(result)")
        #expect(Self.durations(result.output).allSatisfy { $0 < 5000 } && !result.output.contains("storage"))
    }

    @Test func aFileKeyringIsNeverReplacedByANewSecretServiceOne() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let before = FileManager.default.contents(atPath: h.base + "/keyring")
        let result = Self.session(h, """
            dotsafe --keyring secret-service init storage2
            echo "service: $(secret-tool lookup keyring default | head -c 8)"
            ls
            """)
        #expect(Self.dotsafeLines(result.error) == "dotsafe: \(h.base)/keyring is a keyring file with a salt: move it with 'dotsafe keyring move secret-service' instead of making a new one\n", "\(result)")
        #expect(result.output.contains("service: \n") && !result.output.contains("storage2"))
        #expect(FileManager.default.contents(atPath: h.base + "/keyring") == before)
    }

    @Test func movingOntoADifferentSecretServiceKeyringIsRefused() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let before = FileManager.default.contents(atPath: h.base + "/keyring")
        let result = Self.session(h, """
            DOTSAFE_KEYRING='\(h.base)/other' dotsafe --keyring secret-service init other-storage >/dev/null
            dotsafe keyring move secret-service
            DOTSAFE_KEYRING='\(h.base)/other' dotsafe keyring
            """)
        #expect(Self.dotsafeLines(result.error) == "dotsafe: the Secret Service (recorded in \(h.base)/keyring) already holds a different keyring: moving would lose one of the two salts; nothing was changed\n", "\(result)")
        #expect(result.output.contains("The keyring is in the Secret Service (recorded in \(h.base)/other)."))
        #expect(FileManager.default.contents(atPath: h.base + "/keyring") == before)
    }
}
