import DotSafeTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

/// `dotsafe status` and `dotsafe lock --all` (R-INT-3) on real mounts. Each test has a runtime
/// folder of its own (XDG_RUNTIME_DIR), so that it sees, and locks, only its own vaults.
@Suite struct StatusTests {
    static let patterns = ["b2-c2-d3-d4-c4-b4", "c3-d4-e5-d5-c5-b5"]

    struct Session {
        let h: MountHarness
        let runtime: String

        init(runtimeName: String = "run") throws {
            h = try MountHarness()
            runtime = h.base + "/" + runtimeName
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: false,
                                                    attributes: [.posixPermissions: 0o700])
        }

        @discardableResult
        func dotsafe(_ arguments: [String], input: String? = nil) -> CommandResult {
            h.run("/usr/bin/env", ["XDG_RUNTIME_DIR=\(runtime)", MountHarness.binary] + arguments, input: input)
        }

        func mount(_ point: String, pattern: String, options: [String] = []) -> CommandResult {
            dotsafe(["mount", h.storage, point, "--pattern-stdin"] + options, input: pattern + "\n")
        }

        /// A stand-in daemon of `mountPoint`: python3 runs `serve` with `s`, the listening socket
        /// of a lock channel in the runtime folder, and `sys.argv[3:]`, `arguments`; a mount
        /// record names it, with `storage` (the harness's by default) and `recordFields`, more
        /// JSON members. `stop` ends it and removes its files.
        func standInDaemon(for mountPoint: String, serving serve: String, arguments: [String] = [],
                           storage: String? = nil, recordFields: String = "") throws -> (pid: Int32, stop: () -> Void) {
            let folder = runtime + "/dotsafe", name = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            // As a daemon would have made it, if no mount did yet.
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            let server = Process()
            server.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            server.arguments = ["-c", """
                import os,socket,sys,time
                os.chdir(sys.argv[1])  # a relative name: the test folder's path may pass sun_path's 108 bytes
                s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[2]); s.listen(8)
                print('listening', flush=True)
                \(serve)
                """, folder, name + ".sock"] + arguments
            let output = Pipe()
            server.standardOutput = output
            try server.run()
            let stop = {
                kill(server.processIdentifier, SIGKILL)
                server.waitUntilExit()
                unlink(folder + "/" + name + ".sock")
                unlink(folder + "/" + name + ".mount")
            }
            #expect(output.fileHandleForReading.availableData.starts(with: Data("listening".utf8)))
            let record = #"{"mountPoint":"\#(mountPoint)","storage":"\#(storage ?? h.storage)","started":0,"pid":\#(server.processIdentifier),"#
                + #""name":"\#(name)"\#(recordFields)}"#
            #expect(FileManager.default.createFile(atPath: folder + "/" + name + ".mount", contents: Data(record.utf8),
                                                   attributes: [.posixPermissions: 0o600]))
            return (server.processIdentifier, stop)
        }

        func status() throws -> [[String: Any]] {
            let result = dotsafe(["status", "--json"])
            #expect(result.status == 0 && result.error.isEmpty, "\(result)")
            return try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]])
        }
    }

    @Test func nothingOpenIsSaidPlainly() throws {
        let s = try Session()
        defer { s.h.finish() }
        #expect(s.dotsafe(["status"]).output == "No vault is open.\n")
        #expect(try s.status().isEmpty)
        #expect(s.dotsafe(["lock", "--all"]).output == "No vault is open.\n")
    }

    @Test func statusListsEachOpenVaultAndLockAllLocksThem() throws {
        let s = try Session()
        defer { s.h.finish() }
        let first = try s.h.mountPoint("first"), second = try s.h.mountPoint("second")
        try #require(s.mount(first, pattern: Self.patterns[0]).status == 0)
        try #require(s.mount(second, pattern: Self.patterns[1], options: ["--idle", "5m"]).status == 0)
        s.h.sh("printf data | dd of=written conv=fsync status=none", in: first)

        let entries = try s.status()
        #expect(entries.count == 2)
        for entry in entries {
            #expect(Set(entry.keys) == ["mountpoint", "storage", "since", "pending", "idle", "sync"])
            #expect(entry["storage"] as? String == s.h.storage)
            #expect(entry["sync"] as? String == "off")
            let since = try #require(entry["since"] as? String)
            let date = try #require(ISO8601DateFormatter().date(from: since))
            #expect(abs(date.timeIntervalSinceNow) < 600)
        }
        let byPoint = Dictionary(uniqueKeysWithValues: entries.map { ($0["mountpoint"] as! String, $0) })
        #expect(byPoint[first]?["pending"] as? Bool == false, "an fsync commits")
        #expect(byPoint[first]?["idle"] is NSNull)
        let idle = try #require(byPoint[second]?["idle"] as? Double)
        #expect(idle > 200 && idle <= 300)

        let table = s.dotsafe(["status"]).output.split(separator: "\n").map(String.init)
        #expect(table.first?.hasPrefix("MOUNT POINT") == true && table.count == 3, "\(table)")
        #expect(table.contains { $0.hasPrefix(first + " ") && $0.hasSuffix("  -") })
        #expect(table.contains { $0.hasPrefix(second + " ") && ($0.hasSuffix(" in 5m 0s") || $0.contains(" in 4m ")) }, "\(table)")

        let locked = s.dotsafe(["lock", "--all"])
        #expect(locked.status == 0 && locked.output == "Locked \(first).\nLocked \(second).\n", "\(locked)")
        #expect(!MountHarness.isMounted(first) && !MountHarness.isMounted(second))
        #expect(try s.status().isEmpty)
        // Locked means written: the file is there at the next mount.
        try #require(s.mount(first, pattern: Self.patterns[0]).status == 0)
        s.h.sh("test \"$(cat written)\" = data", in: first)
        #expect(s.dotsafe(["lock", first]).status == 0)
    }

    /// A stopped daemon (SIGSTOP) answers nothing: `status` waits for it a couple of seconds,
    /// lists it without its state and says so, and lists the others; `lock` keeps waiting (a big
    /// commit may take long) but says, after some seconds, what it waits for.
    @Test func aDaemonThatDoesNotAnswerHoldsUpNeitherStatusNorTheUser() throws {
        let s = try Session()
        defer { s.h.finish() }
        let first = try s.h.mountPoint("first"), second = try s.h.mountPoint("second")
        try #require(s.mount(first, pattern: Self.patterns[0]).status == 0)
        try #require(s.mount(second, pattern: Self.patterns[1]).status == 0)
        s.h.sh("echo kept > kept.txt", in: second)
        let pid = try #require(MountHarness.daemonPID(for: second))
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }

        let start = Date()
        let status = s.dotsafe(["status", "--json"])
        #expect(Date().timeIntervalSince(start) < 8, "status waited \(Date().timeIntervalSince(start)) s")
        #expect(status.status == 0 && status.error == "dotsafe: the daemon of \(second) (pid \(pid)) does not answer\n", "\(status)")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [[String: Any]])
        let byPoint = Dictionary(uniqueKeysWithValues: entries.map { ($0["mountpoint"] as! String, $0) })
        #expect(byPoint.count == 2 && byPoint[first]?["sync"] as? String == "off", "\(entries)")
        #expect(byPoint[second]?["pending"] is NSNull && byPoint[second]?["sync"] is NSNull, "\(entries)")

        let locked = Mutex<CommandResult?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let result = s.dotsafe(["lock", second])
            locked.withLock { $0 = result }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 7) == .timedOut, "lock returned while its daemon was stopped")
        kill(pid, SIGCONT)
        #expect(done.wait(timeout: .now() + 20) == .success)
        let result = try #require(locked.withLock { $0 })
        #expect(result.status == 0 && result.output == "Locked \(second).\n", "\(result)")
        #expect(result.error == "dotsafe: still waiting for the daemon of \(second) (pid \(pid)) to lock it: it is stopped ('kill -CONT \(pid)' lets it go on)\n")
        #expect(s.dotsafe(["lock", "--all"]).output == "Locked \(first).\n")
        try #require(s.mount(second, pattern: Self.patterns[1]).status == 0)
        s.h.sh("test \"$(cat kept.txt)\" = kept", in: second)
        #expect(s.dotsafe(["lock", second]).status == 0)
    }

    /// `contact`, `share` and `unshare` ask a stopped daemon nothing: after the couple of
    /// seconds `status` gives it, each says it does not answer and fails, nothing queued for
    /// it to do once it goes on; and then they work again.
    @Test func aStoppedDaemonIsAskedNothing() throws {
        let s = try Session()
        defer { s.h.finish() }
        let vault = try s.h.mountPoint()
        try #require(s.mount(vault, pattern: Self.patterns[0]).status == 0)
        let contact = s.dotsafe(["contact", vault])
        try #require(contact.status == 0 && contact.output.hasPrefix("dotsafe1"), "\(contact)")
        let code = contact.output.trimmingCharacters(in: .newlines)
        let pid = try #require(MountHarness.daemonPID(for: vault))
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        for arguments in [["contact", vault], ["share", "--to", code, vault], ["unshare", "--to", code, vault]] {
            // Without a bound these would wait for ever: give up on them after 12 s.
            let answered = Mutex<CommandResult?>(nil)
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                let result = s.dotsafe(arguments)
                answered.withLock { $0 = result }
                done.signal()
            }
            try #require(done.wait(timeout: .now() + 12) == .success, "\(arguments[0]) waits for a stopped daemon")
            let result = try #require(answered.withLock { $0 })
            #expect(result.status == 1 && result.output.isEmpty, "\(arguments[0]): \(result)")
            #expect(result.error == "dotsafe: the daemon of \(vault) (pid \(pid)) does not answer: it may be stopped; "
                    + "nothing was asked of it\n", "\(arguments[0]): \(result)")
        }
        kill(pid, SIGCONT)
        #expect(s.dotsafe(["contact", vault]).output == contact.output)
        #expect(s.dotsafe(["status", "--json"]).error.isEmpty)
        #expect(s.dotsafe(["lock", vault]).output == "Locked \(vault).\n")
    }

    /// `share` and `unshare` wait for the work as long as it takes once the daemon answered
    /// `status` (a commit, new keys), but say after some seconds what they wait for, as `lock`
    /// does. The daemon is a stand-in that answers `status` at once and the request only when
    /// the test has seen the note.
    @Test func shareAndUnshareSayWhatTheyWaitFor() throws {
        let s = try Session()
        defer { s.h.finish() }
        let real = try s.h.mountPoint("real")
        try #require(s.mount(real, pattern: Self.patterns[0]).status == 0)
        let contact = s.dotsafe(["contact", real])
        try #require(contact.status == 0, "\(contact)")
        let code = contact.output.trimmingCharacters(in: .newlines)
        #expect(s.dotsafe(["lock", real]).status == 0)

        let slow = s.h.base + "/slow", go = s.h.base + "/go"
        let daemon = try s.standInDaemon(for: slow, serving: """
            while True:
                c,_=s.accept(); request=c.makefile().readline().strip()
                if request=='status':
                    c.sendall(b'{"pending":false}\\n')
                else:
                    while not os.path.exists(sys.argv[3]): time.sleep(0.05)
                    os.unlink(sys.argv[3])
                    c.sendall(b'shared dotsafe1own\\n' if request.startswith('share ') else b'unshared\\n')
                c.close()
            """, arguments: [go])
        defer { daemon.stop() }

        for (command, doing) in [("share", "share it"), ("unshare", "withdraw it")] {
            let errors = s.h.base + "/\(command).err"
            let answered = Mutex<CommandResult?>(nil)
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                let result = s.h.sh("XDG_RUNTIME_DIR='\(s.runtime)' '\(MountHarness.binary)' \(command) --to \(code) '\(slow)' 2>'\(errors)'",
                                    expectFailure: true)
                answered.withLock { $0 = result }
                done.signal()
            }
            let note = "dotsafe: still waiting for the daemon of \(slow) (pid \(daemon.pid)) to \(doing): "
                + "it may be writing a lot, or be hung\n"
            let noted = waitFor(seconds: 60) { (try? String(contentsOfFile: errors, encoding: .utf8)) == note }
            #expect(noted, "\(command): \((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "")")
            #expect(FileManager.default.createFile(atPath: go, contents: nil))
            try #require(done.wait(timeout: .now() + 60) == .success, "\(command) returned not after its answer")
            let result = try #require(answered.withLock { $0 })
            #expect(result.status == 0, "\(command): \(result)")
            #expect(result.output.hasPrefix(command == "share" ? "Shared the vault at \(slow)" : "Withdrew the vault at \(slow)"),
                    "\(command): \(result)")
            #expect(try String(contentsOfFile: errors, encoding: .utf8) == note, "\(command): one note, nothing else")
        }
    }

    /// A running daemon's lock is called long only after its re-creation budget for its
    /// storage's size (a healthy lock after a big write takes that long; session 48's benchmark
    /// was told at each lock that its daemon "may be stopped"), and after the usual 5 s when its
    /// record says it re-creates nothing past the session's files. Stand-ins answer `lock` when
    /// the test lets them.
    @Test func aLockIsCalledLongOnlyAfterTheDaemonsRecreationBudget() throws {
        let s = try Session()
        defer { s.h.finish() }
        // 6,000 files of the storage's size are 1.5 GiB: 15 s more at 10 s per GiB.
        let storage = s.h.base + "/big-storage"
        try FileManager.default.createDirectory(atPath: storage, withIntermediateDirectories: false)
        for n in 0..<6000 { #expect(FileManager.default.createFile(atPath: storage + "/\(n)", contents: nil)) }
        let serve = """
            c,_=s.accept(); c.makefile().readline()
            while not os.path.exists(sys.argv[3]): time.sleep(0.05)
            c.sendall(b'locked\\n'); c.close(); time.sleep(600)
            """
        let go = s.h.base + "/go"
        final class Lock: Sendable {
            let point: String, errors: String, pid: Int32
            let done = DispatchSemaphore(value: 0), result = Mutex<CommandResult?>(nil)
            init(point: String, errors: String, pid: Int32) { (self.point, self.errors, self.pid) = (point, errors, pid) }
        }
        var locks: [Lock] = [], stops: [() -> Void] = []
        defer { stops.forEach { $0() } }
        for (name, fields) in [("budgeted", ""), ("budgetless", #","recreateSecondsPerGiB":0"#)] {
            let point = s.h.base + "/" + name
            let daemon = try s.standInDaemon(for: point, serving: serve, arguments: [go], storage: storage, recordFields: fields)
            stops.append(daemon.stop)
            let lock = Lock(point: point, errors: s.h.base + "/\(name).err", pid: daemon.pid)
            DispatchQueue.global().async {
                let result = s.h.sh("XDG_RUNTIME_DIR='\(s.runtime)' '\(MountHarness.binary)' lock '\(point)' 2>'\(lock.errors)'")
                lock.result.withLock { $0 = result }
                lock.done.signal()
            }
            locks.append(lock)
        }
        let begun = Date()
        let errors = { (index: Int) in (try? String(contentsOfFile: locks[index].errors, encoding: .utf8)) ?? "" }
        let note = "dotsafe: still waiting for the daemon of \(locks[1].point) (pid \(locks[1].pid)) to lock it: "
            + "it may be writing a lot, or be hung\n"
        #expect(waitFor(seconds: 60) { errors(1) == note }, "\(errors(1))")
        let seen = Date().timeIntervalSince(begun)
        #expect(seen >= 4.5, "the note after \(seen) s")
        // The other's patience is 20 s: 9 s in, it has said nothing.
        usleep(useconds_t(max(0, 9 - seen) * 1e6))
        #expect(errors(0).isEmpty, "\(errors(0))")
        #expect(FileManager.default.createFile(atPath: go, contents: nil))
        for (index, lock) in locks.enumerated() {
            try #require(lock.done.wait(timeout: .now() + 60) == .success, "\(lock.point)")
            let result = try #require(lock.result.withLock { $0 })
            #expect(result.status == 0 && result.output == "Locked \(lock.point).\n", "\(result)")
            #expect(errors(index) == (index == 0 ? "" : note), "\(lock.point)")
        }
    }

    /// `lock --all` goes on past a vault that fails to lock, and its error line names that
    /// vault. The failing one is a stand-in daemon (a real one fails only when its storage
    /// does): it answers `lock` as a daemon whose final commit failed.
    @Test func lockAllNamesTheVaultThatFailed() throws {
        let s = try Session()
        defer { s.h.finish() }
        let real = try s.h.mountPoint("real"), failing = s.h.base + "/failing"
        try #require(s.mount(real, pattern: Self.patterns[0]).status == 0)
        let daemon = try s.standInDaemon(for: failing, serving: """
            c,_=s.accept(); c.recv(100); c.sendall(b'failed: the commit failed: no space left on device\\n'); c.close()
            """)
        defer { daemon.stop() }
        let locked = s.dotsafe(["lock", "--all"])
        #expect(locked.status == 1 && locked.output == "Locked \(real).\n", "\(locked)")
        #expect(locked.error == "dotsafe: could not lock \(failing): the commit failed: no space left on device\n", "\(locked)")
        #expect(!MountHarness.isMounted(real))
    }

    /// `mount` prints the command that locks the vault: a mount point with spaces, quotes or `$`
    /// is quoted so that the line can be pasted into a shell as it is.
    @Test func theLockCommandMountPrintsCanBePasted() throws {
        let s = try Session()
        defer { s.h.finish() }
        let vault = try s.h.mountPoint("it's my $HOME vault")
        let mounted = s.mount(vault, pattern: Self.patterns[0])
        let quoted = "'" + vault.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
        #expect(mounted.status == 0 && mounted.output == "Mounted the vault at \(vault). Lock it with: dotsafe lock \(quoted)\n", "\(mounted)")
        let command = try #require(mounted.output.components(separatedBy: "Lock it with: ").last?.dropLast())
        let pasted = s.h.run("/usr/bin/env", ["XDG_RUNTIME_DIR=\(s.runtime)", "PATH=\((MountHarness.binary as NSString).deletingLastPathComponent):/usr/bin:/bin",
                                             "/bin/sh", "-c", String(command)], input: nil)
        #expect(pasted.status == 0 && pasted.output == "Locked \(vault).\n", "\(pasted)")
        #expect(!MountHarness.isMounted(vault))
    }

    /// A socket path has room for 107 bytes; a deep XDG_RUNTIME_DIR must not stop a mount.
    @Test func aRuntimeFolderTooDeepForASocketPathStillWorks() throws {
        let s = try Session(runtimeName: String(repeating: "r", count: 110))
        defer { s.h.finish() }
        let vault = try s.h.mountPoint()
        let mounted = s.mount(vault, pattern: Self.patterns[0])
        try #require(mounted.status == 0, "\(mounted)")
        #expect(try s.status().count == 1)
        #expect(s.dotsafe(["lock", vault]).status == 0)
        #expect(!MountHarness.isMounted(vault))
    }

    @Test func theSecondMountSaysWhereTheVaultIsMounted() throws {
        let s = try Session()
        defer { s.h.finish() }
        let first = try s.h.mountPoint("first"), second = try s.h.mountPoint("second")
        try #require(s.mount(first, pattern: Self.patterns[0]).status == 0)
        let again = s.mount(second, pattern: Self.patterns[0])
        #expect(again.status == 1 && again.error == "dotsafe: this vault is already mounted at \(first)\n")
        #expect(s.dotsafe(["lock", "--all"]).status == 0)
    }

    /// /proc/mounts gives a page per read: a mount point listed past the first 4 KiB must still be
    /// seen (Foundation's String(contentsOfFile:) stopped there). In a mount namespace of the
    /// test's own, 120 tmpfs mounts come first (80 were not enough under a short TMPDIR), then one
    /// on the mount point.
    @Test(.enabled(if: getuid() == 0, "mounting tmpfs needs root")) func aMountPointFarDownTheMountTableIsSeen() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let result = h.sh("""
            mkdir -p many target
            unshare -m --propagation private bash -euo pipefail -c '
                for i in $(seq 1 120); do mkdir -p many/$i && mount -t tmpfs -o size=64k tmpfs many/$i; done
                mount -t tmpfs -o size=64k tmpfs target
                echo "table: $(wc -c </proc/mounts)"
                echo "\(Self.patterns[0])" | "\(MountHarness.binary)" mount storage target --pattern-stdin || echo "status $?"
            '
            """, expectFailure: true)
        let size = result.output.split(separator: "\n").first { $0.hasPrefix("table: ") }.flatMap { Int($0.dropFirst(7)) } ?? 0
        #expect(size > 8192, "the table is not past the first page: \(result)")
        #expect(result.error == "dotsafe: mount point \(h.base)/target is mounted on already\n", "\(result)")
        #expect(result.output.hasSuffix("status 1\n"), "\(result)")
        #expect(!MountHarness.isMounted(h.base + "/target"))
    }
}
