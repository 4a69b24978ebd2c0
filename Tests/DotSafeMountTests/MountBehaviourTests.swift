import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// What a careful user checks of a vault: nothing readable on disk, no wrong pattern, vaults
/// apart, fsync durable, and one clear line for every bad input (issue 4).
@Suite(.serialized) struct MountBehaviourTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"
    static let other = "c3-d4-e5-e4-d3"

    @Test func markerWrittenToTheVaultIsNowhereOnDisk() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        // Built at run time so the marker is in no file of the test itself.
        let marker = "DOTSAFE-MARKER-" + String(UInt64.random(in: 1..<UInt64.max), radix: 36)
        h.sh("""
            for i in $(seq 1 50); do printf '%s %s\\n' '\(marker)' $i > small-$i.txt; done
            { for i in $(seq 1 20000); do printf '%s\\n' '\(marker)'; done; } > big.txt
            sync
            """, in: vault)
        #expect(h.lock(vault).status == 0)
        // On disk: not down into other tests' live mounts below /tmp (-xdev), whose files
        // grep would read through their daemons (the plaintext views they are meant to be).
        let found = h.sh("find \(h.storage) /tmp /dev/shm -xdev -type f -exec grep -laF '\(marker)' {} + 2>/dev/null || true")
        #expect(found.output.isEmpty, "marker found in: \(found.output)")
    }

    @Test func aWrongPatternShowsAnEmptyFolderAndChangesNothing() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("echo secret > a.txt", in: vault)
        #expect(h.lock(vault).status == 0)
        let before = try h.storageSnapshot()
        try #require(h.mount(vault, pattern: Self.other).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: vault).isEmpty)
        h.sh("ls -la > /dev/null; stat . > /dev/null", in: vault)
        #expect(h.lock(vault).status == 0)
        #expect(try h.storageSnapshot() == before)
    }

    @Test func twoVaultsInOneStorageStayApart() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let a = try h.mountPoint("a"), b = try h.mountPoint("b")
        try #require(h.mount(a, pattern: Self.pattern).status == 0)
        try #require(h.mount(b, pattern: Self.other).status == 0)
        h.sh("echo in-a > only-a && mkdir dir-a", in: a)
        h.sh("echo in-b > only-b && dd if=/dev/urandom of=blob bs=1M count=5 status=none && sha256sum blob > ../blob.sha", in: b)
        #expect(try FileManager.default.contentsOfDirectory(atPath: a).sorted() == ["dir-a", "only-a"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: b).sorted() == ["blob", "only-b"])
        #expect(h.lock(a).status == 0)
        #expect(h.lock(b).status == 0)
        try #require(h.mount(b, pattern: Self.other).status == 0)
        h.sh("test \"$(cat only-b)\" = in-b && sha256sum -c --quiet ../blob.sha && test ! -e only-a", in: b)
        #expect(h.lock(b).status == 0)
    }

    @Test func theSameVaultCannotBeMountedTwice() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let first = try h.mountPoint("first"), second = try h.mountPoint("second")
        try #require(h.mount(first, pattern: Self.pattern).status == 0)
        let names = try FileManager.default.contentsOfDirectory(atPath: h.storage).sorted()
        let again = h.mount(second, pattern: Self.pattern)
        #expect(again.status == 1)
        #expect(again.error == "dotsafe: this vault is already mounted at \(first)\n")
        #expect(!MountHarness.isMounted(second))
        #expect(try FileManager.default.contentsOfDirectory(atPath: h.storage).sorted() == names)
        #expect(h.lock(first).status == 0)
    }

    /// The guard does not hang on the environment: a mount started without XDG_RUNTIME_DIR (cron,
    /// an fstab line at boot) and one from a session that has it see each other. Two daemons on
    /// one vault lost fsynced files and damaged the vault.
    @Test func theSameVaultCannotBeMountedTwiceFromTwoRuntimeFolders() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let runtime = h.base + "/run"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        let first = try h.mountPoint("first"), second = try h.mountPoint("second")
        try #require(h.mount(first, pattern: Self.pattern).status == 0)
        let again = h.run("/usr/bin/env", ["XDG_RUNTIME_DIR=\(runtime)", MountHarness.binary, "mount", h.storage, second, "--pattern-stdin"],
                          input: Self.pattern + "\n")
        #expect(again.status == 1)
        #expect(again.error == "dotsafe: this vault is already mounted at \(first)\n")
        #expect(!MountHarness.isMounted(second))
        #expect(h.lock(first).status == 0)
    }

    @Test func killNineAfterFsyncLosesNothingThatWasSynced() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("""
            dd if=/dev/urandom of=synced.bin bs=1M count=3 status=none conv=fsync
            printf 'small and synced' > small.txt && python3 -c 'import os; f = os.open("small.txt", os.O_RDONLY); os.fsync(f)'
            sha256sum synced.bin small.txt > ../synced.sha
            """, in: vault)
        let pid = try #require(MountHarness.daemonPID(for: vault))
        kill(pid, SIGKILL)
        for _ in 0..<100 where MountHarness.daemonPID(for: vault) != nil { usleep(50_000) }
        h.run("/bin/fusermount3", ["-u", "-z", vault], input: nil)
        #expect(!MountHarness.isMounted(vault))
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("sha256sum -c --quiet ../synced.sha", in: vault)
        #expect(h.lock(vault).status == 0)
    }

    @Test func aPatternArgumentIsNotInTheDaemonsCommandLine() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        let result = h.dotsafe(["mount", h.storage, vault, "--pattern", Self.pattern])
        try #require(result.status == 0, "\(result)")
        let pid = try #require(MountHarness.daemonPID(for: vault))
        let cmdline = String(decoding: FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") ?? Data(), as: UTF8.self)
        #expect(!cmdline.contains("c2-d3"))
        #expect(h.lock(vault).status == 0)
        #expect(MountHarness.daemonPID(for: vault) == nil)
    }

    @Test func badInputsGetOneLineAndChangeNothing() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let before = try h.storageSnapshot()
        let vault = try h.mountPoint()
        let cases: [(arguments: [String], input: String?, message: String)] = [
            (["mount", h.storage, h.base + "/missing", "--pattern-stdin"], Self.pattern, "dotsafe: mount point \(h.base)/missing does not exist\n"),
            (["mount", h.storage, h.storage, "--pattern-stdin"], Self.pattern, "dotsafe: mount point \(h.storage) is not empty\n"),
            (["mount", h.base, vault, "--pattern-stdin"], Self.pattern,
             "dotsafe: not a DotSafe storage: \(h.base) holds 0 storage files, a storage has at least 64 (make one with 'dotsafe init')\n"),
            (["mount", h.storage, vault, "--pattern-stdin"], "a1-b2-c3-e5", "dotsafe: invalid pattern: e5 is not next to c3\n"),
            (["mount", h.storage, vault, "--pattern-stdin"], "b2-b2", "dotsafe: invalid pattern: b2 is used twice\n"),
            (["--keyring", h.base + "/nokeyring", "mount", h.storage, vault, "--pattern-stdin"], Self.pattern,
             "dotsafe: the keyring is missing (\(h.base)/nokeyring): the vaults in this storage need the salt they were made with; "
                + "import your backup with 'dotsafe keyring import FILE' or 'dotsafe keyring import --text' "
                + "('dotsafe init' would make a new keyring that opens none of them)\n"),
        ]
        for (arguments, input, message) in cases {
            let result = h.dotsafe(arguments, input: input.map { $0 + "\n" })
            #expect(result.status == 1, "\(arguments): \(result)")
            #expect(result.error == message, "\(arguments)")
            #expect(!MountHarness.isMounted(vault))
        }
        let usage = h.dotsafe(["mount", h.storage])
        #expect(usage.status == 64 && usage.error.hasPrefix("dotsafe: missing argument MOUNTPOINT\n"))
        #expect(try h.storageSnapshot() == before)
    }

    @Test func aDamagedIndexIsRefusedAtMountAndLeftAlone() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: h.storage))
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("echo precious > keep.txt", in: vault)
        #expect(h.lock(vault).status == 0)
        // The vault's new files; flip a byte in every one of them: its index slots among them.
        let added = Set(try FileManager.default.contentsOfDirectory(atPath: h.storage)).subtracting(before)
        #expect(added.count == 16)
        for name in added {
            h.sh("printf '\\xff' | dd of=\(h.storage)/\(name) bs=1 seek=100 conv=notrunc status=none")
        }
        let damaged = try h.storageSnapshot()
        let result = h.mount(vault, pattern: Self.pattern)
        #expect(result.status == 1)
        #expect(result.error.hasPrefix("dotsafe: the vault's index is damaged: "), "\(result)")
        #expect(result.error.split(separator: "\n").count == 1)
        #expect(!MountHarness.isMounted(vault))
        #expect(try h.storageSnapshot() == damaged)
    }
}
