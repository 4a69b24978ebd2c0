import DotSafeTestSupport
import Foundation
import Testing

/// `mount --lock-on-suspend` against a real `dbus-daemon` of the test's own (its socket in the
/// test's folder, reached through DBUS_SYSTEM_BUS_ADDRESS) and a fake logind on it: a Python
/// program (python3-dbus) that owns org.freedesktop.login1, answers GetSessionByPID and Inhibit
/// (with a pipe whose closing it reports as "released"), and emits PrepareForSleep and
/// Session.Lock when told to through a FIFO. The other local user is played by `dbus-send`:
/// the same signals from a connection that does not own logind's name, broadcast and sent
/// straight to every connection on the bus.
///
/// PrepareForSleep(true) and our session's Lock each lock the vault (mount gone, daemon exited
/// with 0, inhibitor released, the data there at the next mount); outside a session `mount`
/// says that only sleep locks; a bus that goes away locks the vault and tells the system log.
@Suite struct LockOnSuspendTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"
    static let session = "/org/freedesktop/login1/session/_31"

    static let busConfig = """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>system</type>
          <listen>unix:path=bus.sock</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow user="*"/><allow own="*"/><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>
          </policy>
        </busconfig>
        """

    static let fakeLogind = """
        import os, sys
        import dbus, dbus.service, dbus.mainloop.glib
        from gi.repository import GLib

        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        control, events = sys.argv[1], sys.argv[2]
        bus = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])
        SESSION, OTHER = "\(session)", "/org/freedesktop/login1/session/_32"

        def note(line):
            with open(events, "a") as f:
                f.write(line + "\\n")

        def released(fd, condition):
            note("released")
            os.close(fd)
            return False

        class Manager(dbus.service.Object):
            @dbus.service.method("org.freedesktop.login1.Manager", in_signature="u", out_signature="o")
            def GetSessionByPID(self, pid):
                if os.path.exists("no-session"):
                    raise dbus.exceptions.DBusException("PID %d does not belong to any known session" % pid,
                                                        name="org.freedesktop.login1.NoSessionForPID")
                return dbus.ObjectPath(SESSION)

            @dbus.service.method("org.freedesktop.login1.Manager", in_signature="ssss", out_signature="h")
            def Inhibit(self, what, who, why, mode):
                read, write = os.pipe()
                GLib.io_add_watch(read, GLib.PRIORITY_DEFAULT, GLib.IO_HUP, released)
                handle = dbus.types.UnixFd(write)
                os.close(write)
                note("inhibit %s %s %s" % (what, who, mode))
                return handle

            @dbus.service.signal("org.freedesktop.login1.Manager", signature="b")
            def PrepareForSleep(self, start):
                pass

        class Session(dbus.service.Object):
            @dbus.service.signal("org.freedesktop.login1.Session", signature="")
            def Lock(self):
                pass

        manager = Manager(bus, "/org/freedesktop/login1")
        sessions = {SESSION: Session(bus, SESSION), OTHER: Session(bus, OTHER)}
        name = dbus.service.BusName("org.freedesktop.login1", bus)

        def command(fd, condition):
            for word in os.read(fd, 4096).decode().split():
                if word == "sleep": manager.PrepareForSleep(True)
                elif word == "resume": manager.PrepareForSleep(False)
                elif word == "lock": sessions[SESSION].Lock()
                elif word == "lock-other": sessions[OTHER].Lock()
                note("sent " + word)
            return True

        # Read-write: the FIFO never reads as ended while the test's writers come and go.
        GLib.io_add_watch(os.open(control, os.O_RDWR), GLib.PRIORITY_DEFAULT, GLib.IO_IN, command)
        note("ready")
        GLib.MainLoop().run()
        """

    /// Runs `body` (bash, in the harness folder) with a private bus and, if asked, the fake
    /// logind on it; `tell WORD` sends the fake a command, `expect_event LINE` waits for its note.
    static func withBus(_ h: MountHarness, logind: Bool = true, _ body: String) throws -> CommandResult {
        try busConfig.write(toFile: h.base + "/bus.conf", atomically: false, encoding: .utf8)
        try fakeLogind.write(toFile: h.base + "/fake-logind.py", atomically: false, encoding: .utf8)
        let script = """
            set -u
            export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$PWD/bus.sock"
            # The test runner's threads block SIGTERM and children inherit the mask: stop with KILL.
            dbus-daemon --config-file="$PWD/bus.conf" --nofork --nopidfile >/dev/null 2>&1 &
            bus=$!
            logind=
            trap 'kill -KILL $bus $logind 2>/dev/null; true' EXIT
            for i in $(seq 1 100); do [ -S bus.sock ] && break; sleep 0.05; done
            touch events
            expect_event() {
                for i in $(seq 1 200); do grep -qx "$1" events && return 0; sleep 0.05; done
                echo "no event '$1'"; return 1
            }
            if \(logind); then
                mkfifo control
                /usr/bin/python3 fake-logind.py control events >logind.out 2>&1 &
                logind=$!
                expect_event ready
            fi
            tell() { echo "$1" >control; expect_event "sent $1"; }
            mounted() { grep -q " $PWD/$1 fuse" /proc/mounts; }
            wait_unmounted() { for i in $(seq 1 200); do mounted "$1" || return 0; sleep 0.05; done; return 1; }
            wait_mounted() { for i in $(seq 1 200); do mounted "$1" && return 0; sleep 0.05; done; return 1; }
            daemon_gone() { for i in $(seq 1 200); do pgrep -f "dotsafe.* mount .*$PWD/$1" >/dev/null || return 0; sleep 0.05; done; return 1; }
            dotsafe() { '\(MountHarness.binary)' "$@"; }
            \(body)
            """
        return h.sh(script, expectFailure: true)
    }

    @Test func sleepAndSessionLockLockTheVaultAndFakeSignalsDoNot() throws {
        let h = try MountHarness()
        defer { h.finish() }
        _ = try h.mountPoint("mnt")
        let log = try DatagramListener(name: h.base + "/log")
        let result = try Self.withBus(h, """
            export DOTSAFE_LOG_SOCKET='\(log.name)'
            echo '\(Self.pattern)' | dotsafe mount storage mnt --pattern-stdin --foreground --lock-on-suspend >mount.out 2>mount.err &
            daemon=$!
            wait_mounted mnt && echo "mounted"
            expect_event "inhibit sleep dotsafe delay"
            echo "written before sleep" >mnt/note.txt
            # The other local user: logind's signals from a connection that does not own its name,
            # broadcast and addressed to each connection on the bus (the daemon's among them).
            fake() { dbus-send --system --type=signal "$@" /org/freedesktop/login1 org.freedesktop.login1.Manager.PrepareForSleep boolean:true
                     dbus-send --system --type=signal "$@" \(Self.session) org.freedesktop.login1.Session.Lock; }
            fake
            for name in $(dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.ListNames | grep -o '":1\\.[0-9]*"' | tr -d '"'); do
                fake --dest="$name"
            done
            # logind itself, but not a sleep of ours: a resume, and another session's lock.
            tell resume
            tell lock-other
            sleep 1
            mounted mnt && echo "still mounted: $(cat mnt/note.txt)"
            # A file held open: the unmount is lazy (as for SIGTERM), the daemon serves it until it is
            # closed, and logind's delay waits for that.
            exec 7<mnt/note.txt
            tell sleep
            wait_unmounted mnt && echo "unmounted at sleep"
            sleep 0.5
            kill -0 $daemon && echo "still serving the open file: $(cat <&7)"
            grep -qx released events || echo "inhibitor held while the file is open"
            exec 7<&-
            wait $daemon; echo "daemon exit status: $?"
            expect_event released && echo "inhibitor released"
            cat mount.out mount.err
            # The data was committed; a detached mount locks at the session's lock.
            echo '\(Self.pattern)' | dotsafe mount storage mnt --pattern-stdin --lock-on-suspend --quiet
            echo "remounted: $(cat mnt/note.txt)"
            tell lock
            wait_unmounted mnt && daemon_gone mnt && echo "unmounted at session lock"
            echo '\(Self.pattern)' | dotsafe mount storage mnt --pattern-stdin --quiet >/dev/null
            echo "again: $(cat mnt/note.txt)"
            dotsafe lock mnt
            # Outside a login session (a systemd user unit): only sleep can lock; then the bus goes.
            touch no-session
            echo '\(Self.pattern)' | dotsafe mount storage mnt --pattern-stdin --lock-on-suspend --quiet >/dev/null 2>mount.err
            cat mount.err
            tell lock
            sleep 0.5
            mounted mnt && echo "a session lock changes nothing outside a session"
            kill -KILL $bus
            wait_unmounted mnt && daemon_gone mnt && echo "unmounted when the bus went away"
            """)
        let expected = [
            "mounted",
            "still mounted: written before sleep",
            "unmounted at sleep",
            "still serving the open file: written before sleep",
            "inhibitor held while the file is open",
            "daemon exit status: 0",
            "inhibitor released",
            "Mounted the vault at \(h.base)/mnt; Ctrl-C or 'dotsafe lock \(h.base)/mnt' locks it.",
            "Locked \(h.base)/mnt.",
            "remounted: written before sleep",
            "unmounted at session lock",
            "again: written before sleep",
            "dotsafe: note: --lock-on-suspend: this process is in no login session, so the vault locks when the system suspends but not when a session locks",
            "a session lock changes nothing outside a session",
            "unmounted when the bus went away",
        ]
        var rest = Substring(result.output)
        for line in expected {
            guard let range = rest.range(of: line + "\n") else { Issue.record("missing '\(line)' in order:\n\(result)"); break }
            rest = rest[range.upperBound...]
        }
        #expect(!MountHarness.isMounted(h.base + "/mnt"))
        let line = try #require(log.receive(seconds: 5), "no line in the system log")
        #expect(line.hasPrefix("<12>dotsafe[") && line.hasSuffix("]: \(h.base)/mnt: the system bus went away: locking, as --lock-on-suspend can no longer see a suspend"), "\(line)")
        #expect(log.receive(seconds: 1) == nil, "one line only: nothing for the ordinary mounts and locks")
    }

    @Test func noBusOrNoLogindRefusesTheMountWithOneLine() throws {
        let h = try MountHarness()
        defer { h.finish() }
        _ = try h.mountPoint("mnt")
        let before = try h.storageSnapshot()
        let mount = "echo '\(Self.pattern)' | '\(MountHarness.binary)' mount storage mnt --pattern-stdin"
        let noBus = h.sh("""
            export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$PWD/no-bus.sock"
            \(mount) --lock-on-suspend || echo "status $?"
            \(mount) -o noauto,lock_on_suspend || echo "status $?"
            """, expectFailure: true)
        let unreachable = "dotsafe: --lock-on-suspend needs the system bus, which does not answer (Failed to connect to socket \(h.base)/no-bus.sock: No such file or directory); the vault was not mounted\n"
        #expect(noBus.error == unreachable + unreachable, "\(noBus)")
        #expect(noBus.output == "status 1\nstatus 1\n")

        let noLogind = try Self.withBus(h, logind: false, "\(mount) --lock-on-suspend || echo \"status $?\"")
        #expect(noLogind.error == "dotsafe: --lock-on-suspend needs logind (org.freedesktop.login1), which is not on the system bus; the vault was not mounted\n", "\(noLogind)")
        #expect(noLogind.output == "status 1\n")

        // A bus that accepts and never answers: one line within the deadline (3 s).
        let hung = h.sh("""
            /usr/bin/python3 -c 'import socket, time; s = socket.socket(socket.AF_UNIX); s.bind("hung.sock"); s.listen(8); time.sleep(20)' >/dev/null 2>&1 &
            listener=$!
            trap 'kill -KILL $listener' EXIT
            for i in $(seq 1 100); do [ -S hung.sock ] && break; sleep 0.05; done
            export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$PWD/hung.sock"
            s=$(date +%s%N)
            \(mount) --lock-on-suspend || echo "status $?"
            echo "took=$(( ($(date +%s%N) - s) / 1000000 ))"
            """, expectFailure: true)
        #expect(hung.error == "dotsafe: --lock-on-suspend needs the system bus, which does not answer (the bus at unix:path=\(h.base)/hung.sock did not answer within 3 seconds); the vault was not mounted\n", "\(hung)")
        let took = hung.output.split(separator: "\n").compactMap { $0.hasPrefix("took=") ? Int($0.dropFirst(5)) : nil }
        #expect(hung.output.hasPrefix("status 1\n") && took.count == 1 && took.allSatisfy { $0 < 6000 }, "\(hung)")

        #expect(!MountHarness.isMounted(h.base + "/mnt"))
        #expect(try h.storageSnapshot() == before)
        // Nothing was lost: the vault still opens and mounts without the option.
        #expect(h.mount(h.base + "/mnt", pattern: Self.pattern, options: ["--quiet"]).status == 0)
        #expect(h.lock(h.base + "/mnt").status == 0)
    }
}
