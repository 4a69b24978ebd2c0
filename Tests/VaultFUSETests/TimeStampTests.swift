import DotSafeTestSupport
import Foundation
import Testing
import VaultFUSE

/// A time set with utime(2) stays as on ext4, also over data stored before it that reaches the
/// vault later: a store into a shared mapping comes to the daemon only when the kernel writes its
/// page back (at msync, munmap, close, or whenever), while ext4 takes its time at the page
/// fault. Each script runs in a folder on ext4 and on the mount and must print the same; the
/// times must then survive a lock (the vault keeps them to the nanosecond, FORMAT.md §4; §11.2's
/// rounding at lock is the storage files', not these).
@Suite(.serialized) struct TimeStampTests {
    /// Each line: a file, its size, its first bytes, and its mtime and atime: the time set
    /// (PAST), the one before it (OLDER), or `now` (this run's clock). A variant is the order of
    /// a store into a shared mapping, msync, utime, munmap and close.
    static let mappedScript = #"""
        python3 - <<'EOF'
        import mmap, os, time
        PAST = 1_000_000_000_123_456_789
        OLDER = 946_684_799_500_000_000
        start = time.time_ns()

        def shown(ns):
            if ns in (PAST, OLDER): return str(ns)
            return "now" if ns >= start - 2_000_000_000 else "other %d" % ns

        def report(name, atime=True):
            s = os.stat(name)
            with open(name, "rb") as f: data = f.read()
            print(name, s.st_size, data[:12], "m", shown(s.st_mtime_ns), "a", shown(s.st_atime_ns) if atime else "-")

        def mapped(name, steps):
            fd = os.open(name, os.O_RDWR | os.O_CREAT, 0o644)
            os.ftruncate(fd, 8192)
            os.utime(fd, ns=(OLDER, OLDER))
            m = mmap.mmap(fd, 8192)
            opened = True
            for step in steps:
                if step == "store": m[0:5] = b"hello"
                elif step == "store2": m[4096:4101] = b"again"
                elif step == "msync": m.flush()
                elif step == "truncate": os.ftruncate(fd, 12288)
                elif step == "utime": os.utime(name, ns=(PAST, PAST))
                elif step == "futime": os.utime(fd, ns=(PAST, PAST))
                elif step == "munmap": m.close()
                elif step == "close": os.close(fd); opened = False
            if not m.closed: m.close()
            if opened: os.close(fd)
            report(name)

        mapped("m1", ["store", "utime", "munmap", "close"])
        mapped("m2", ["store", "futime", "msync", "munmap", "close"])
        mapped("m3", ["store", "msync", "utime", "munmap", "close"])
        mapped("m4", ["store", "munmap", "utime", "close"])
        mapped("m5", ["store", "close", "utime", "munmap"])
        mapped("m6", ["store", "utime", "close", "munmap"])
        mapped("m7", ["store", "msync", "utime", "store", "munmap", "close"])
        mapped("m8", ["utime", "store", "munmap", "close"])
        mapped("m9", ["store", "utime", "store2", "munmap", "close"])
        mapped("m10", ["store", "truncate", "utime", "munmap", "close"])
        mapped("m11", ["store", "utime", "truncate", "munmap", "close"])

        fd = os.open("w1", os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"written")
        os.utime(fd, ns=(PAST, PAST))
        os.close(fd)
        report("w1")
        fd = os.open("w2", os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"written")
        os.utime(fd, ns=(PAST, PAST))
        m = mmap.mmap(fd, 7); m[0:3] = b"new"; m.close()
        os.close(fd)
        # The mapping reads the file: ext4 (relatime) moves atime, the mount is noatime.
        report("w2", atime=False)
        with open("t1", "wb") as f: f.write(b"truncated")
        os.truncate("t1", 4)
        os.utime("t1", ns=(PAST, PAST))
        report("t1")
        fd = os.open("t2", os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"truncated")
        os.ftruncate(fd, 4)
        os.utime(fd, ns=(PAST, PAST))
        os.close(fd)
        report("t2")
        EOF
        """#

    /// What ext4 prints (the test checks it does).
    static let mappedExpected = #"""
        m1 8192 b'hello\x00\x00\x00\x00\x00\x00\x00' m 1000000000123456789 a 1000000000123456789
        m2 8192 b'hello\x00\x00\x00\x00\x00\x00\x00' m 1000000000123456789 a 1000000000123456789
        m3 8192 b'hello\x00\x00\x00\x00\x00\x00\x00' m 1000000000123456789 a 1000000000123456789
        m4 8192 b'hello\x00\x00\x00\x00\x00\x00\x00' m 1000000000123456789 a 1000000000123456789
        m5 8192 b'hello\x00\x00\x00\x00\x00\x00\x00' m 1000000000123456789 a 1000000000123456789
        m6 8192 b'hello\x00\x00\x00\x00\x00\x00\x00' m 1000000000123456789 a 1000000000123456789
        m7 8192 b'hello\x00\x00\x00\x00\x00\x00\x00' m now a 1000000000123456789
        m8 8192 b'hello\x00\x00\x00\x00\x00\x00\x00' m now a 1000000000123456789
        m9 8192 b'hello\x00\x00\x00\x00\x00\x00\x00' m now a 1000000000123456789
        m10 12288 b'hello\x00\x00\x00\x00\x00\x00\x00' m 1000000000123456789 a 1000000000123456789
        m11 12288 b'hello\x00\x00\x00\x00\x00\x00\x00' m now a 1000000000123456789
        w1 7 b'written' m 1000000000123456789 a 1000000000123456789
        w2 7 b'newtten' m now a -
        t1 4 b'trun' m 1000000000123456789 a 1000000000123456789
        t2 4 b'trun' m 1000000000123456789 a 1000000000123456789

        """#

    /// Tools that set times from elsewhere: `touch -d`, `cp -p`, `rsync -t`, `tar x` of an
    /// archive with old times (files and the folder, which tar sets after its files). mtimes
    /// only, and no folder's size (the file system's own): cp and rsync read their source first, which moves its atime on ext4 (relatime),
    /// and so do tar's reads.
    static let toolScript = """
        mkdir src && printf abc > src/a && printf defg > src/b
        touch -d '2003-04-05 06:07:08.5' src/a && touch -m -d '1998-01-01 00:00:00.75' src/b
        touch -m -d '2002-02-02 02:02:02.25' src
        tar --format=posix -cf old.tar src && rm -r src && tar -xf old.tar
        cp -p src/a copied && rsync -t src/b synced
        printf data > touched && touch -d '2001-01-01 01:01:01.000000001' touched
        printf longer > cut && truncate -s 2 cut && touch -m -d '1990-06-06 06:06:06' cut
        stat -c '%n %y' src && stat -c '%n %s %y' src/a src/b copied synced touched cut
        """

    static let toolExpected = """
        src 2002-02-02 02:02:02.250000000 +0000
        src/a 3 2003-04-05 06:07:08.500000000 +0000
        src/b 4 1998-01-01 00:00:00.750000000 +0000
        copied 3 2003-04-05 06:07:08.500000000 +0000
        synced 4 1998-01-01 00:00:00.750000000 +0000
        touched 4 2001-01-01 01:01:01.000000001 +0000
        cut 2 1990-06-06 06:06:06.000000000 +0000

        """

    /// Every entry's mtime, atime and ctime to the nanosecond (and size), for the lock to keep.
    static let allTimes = "find . -printf '%p %s %T@ %A@ %C@\\n' | sort"

    @Test func aTimeSetAfterAStoreIntoAMappingStaysAsOnExt4() throws {
        try expectSameOnExt4AndMount(Self.mappedScript, Self.mappedExpected)
    }

    @Test func toolsThatSetTimesKeepThemAsOnExt4() throws {
        try expectSameOnExt4AndMount(Self.toolScript, Self.toolExpected)
    }

    /// The write-back before a utime waits for WRITEs that the loop answers: with one loop
    /// thread too (the utime's own request must not be the one waiting).
    @Test func oneLoopThreadAnswersTheWriteBack() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        try harness.withMount(at: vault, options: FUSEMount.Options(maxThreads: 1)) { _ throws in
            let output = try shell(Self.mappedScript, in: vault)
            #expect(output == Self.mappedExpected, "\(output)")
        }
    }

    private func expectSameOnExt4AndMount(_ script: String, _ expected: String,
                                          sourceLocation: SourceLocation = #_sourceLocation) throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let plain = try harness.mountPoint("plain")
        let onExt4 = try shell(script, in: plain)
        #expect(onExt4 == expected, "ext4:\n\(onExt4)", sourceLocation: sourceLocation)

        let vault = try harness.mountPoint()
        let times = try harness.withMount(at: vault) { _ throws in
            let output = try shell(script, in: vault)
            #expect(output == expected, "the mount:\n\(output)", sourceLocation: sourceLocation)
            return try shell(Self.allTimes, in: vault)
        }
        try harness.withMount(at: vault) { _ throws in
            #expect(try shell(Self.allTimes, in: vault) == times, "after the lock", sourceLocation: sourceLocation)
        }
    }
}
