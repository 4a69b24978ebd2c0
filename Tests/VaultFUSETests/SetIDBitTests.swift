import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultFUSE

/// Set-user-ID and set-group-ID bits and file capabilities go when a file changes, as on ext4:
/// for a write, a truncate, an open with O_TRUNC (the kernel hands that over whole: atomic
/// O_TRUNC) and a chown, whoever drops them (the file system under FUSE_HANDLE_KILLPRIV_V2).
@Suite(.serialized) struct SetIDBitTests {
    /// Each line: the mode a root-owned file with a file capability starts with, who runs
    /// the command, the command, and then the mode and whether the capability is still there.
    static let script = """
        capped() { python3 -c "import os; print('capped' if 'security.capability' in os.listxattr('f') else 'plain')"; }
        change() {
            rm -f f && printf hello > f && chmod $1 f
            python3 -c "import os, struct; os.setxattr('f', 'security.capability', struct.pack('<5I', 0x02000001, 1 << 13, 0, 0, 0))"
            if [ $2 = nobody ]; then runuser -u nobody -- sh -c "$3"; else sh -c "$3"; fi
            echo "$1 $2 '$3' $(stat -c %a f) $(capped)"
        }
        for who in nobody root; do
            change 6777 $who 'echo more >> f'
            change 6777 $who 'truncate -s 1 f'
            change 6777 $who ': > f'
            change 2767 $who ': > f'
            change 6777 $who 'cat f > /dev/null'
        done
        change 6777 root 'chown nobody f'
        change 2767 root 'chown nobody f'
        change 2767 root 'chown :nogroup f'
        """

    /// What ext4 prints (the test checks it does).
    static let expected = """
        6777 nobody 'echo more >> f' 777 plain
        6777 nobody 'truncate -s 1 f' 777 plain
        6777 nobody ': > f' 777 plain
        2767 nobody ': > f' 767 plain
        6777 nobody 'cat f > /dev/null' 6777 capped
        6777 root 'echo more >> f' 6777 plain
        6777 root 'truncate -s 1 f' 6777 plain
        6777 root ': > f' 6777 plain
        2767 root ': > f' 2767 plain
        6777 root 'cat f > /dev/null' 6777 capped
        6777 root 'chown nobody f' 777 plain
        2767 root 'chown nobody f' 2767 plain
        2767 root 'chown :nogroup f' 2767 plain

        """

    @Test func aChangeDropsThemAsOnExt4() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let plain = harness.base + "/plain"
        try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: false)
        chmod(plain, 0o777)
        #expect(try shell(Self.script, in: plain) == Self.expected)

        let vault = try harness.mountPoint()
        try harness.withMount(at: vault, options: FUSEMount.Options(allowOther: true)) { mount throws in
            chmod(vault, 0o777)
            // Known once the kernel has had the INIT reply, which the chmod waited for.
            #expect(mount.fileSystem.dropsPrivileges, "the kernel was told FUSE_HANDLE_KILLPRIV_V2")
            #expect(try shell(Self.script, in: vault) == Self.expected)
            #expect(try shell("chmod 6777 f; runuser -u nobody -- sh -c 'echo new > f'; stat -c '%a %s' f", in: vault) == "777 4\n")
        }
        try harness.withMount(at: vault) { _ throws in
            #expect(try shell("stat -c '%a %s' f", in: vault) == "777 4\n")
        }
    }

    /// What the flag is for: the kernel asks for `security.capability` once per file until its
    /// attributes next change, not before every write (tar writes in 10 KiB records).
    @Test func writesAskForCapabilitiesOnce() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        try harness.withMount(at: vault) { mount throws in
            let before = mount.fileSystem.attributeReadCount
            try shell("dd if=/dev/zero of=f bs=4k count=200 status=none", in: vault)
            let asked = mount.fileSystem.attributeReadCount - before
            #expect(asked <= 2, "getxattr requests for 200 writes: \(asked)")
            #expect(try shell("stat -c %s f", in: vault) == "819200\n")
        }
    }

    /// `ls -l` asks for every entry's ACL and SELinux label until the file system answers
    /// EOPNOTSUPP, then never again on that mount (coreutils keeps the device it failed on).
    @Test func listingAsksForLabelsAndACLsOnce() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        try harness.withMount(at: vault) { mount throws in
            try shell("mkdir d && for i in $(seq 100); do echo $i > d/f$i; done", in: vault)
            let before = mount.fileSystem.attributeReadCount
            #expect(try shell("ls -lR | grep -c '^-rw-r--r-- '", in: vault) == "100\n")
            let asked = mount.fileSystem.attributeReadCount - before
            #expect(asked <= 4, "getxattr requests for ls -lR of 101 entries: \(asked)")
            let refused = try shell("python3 -c \"import os; os.getxattr('d/f1', 'system.posix_acl_access')\" 2>&1 || true", in: vault)
            #expect(refused.contains("Operation not supported"), "\(refused)")
        }
    }
}
