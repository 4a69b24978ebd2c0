import DotSafeTestSupport
import Foundation
import Testing

/// Extended attributes of a namespace ext4 does not know (only `user.`, `trusted.`, `security.`
/// and the ACLs of `system.` exist) are refused with EOPNOTSUPP, and a known prefix with nothing
/// after it with EINVAL: on set, get and remove, and nothing of them is listed. The same script
/// runs on the mount and in a folder of the test (ext4 on the test machines) and must print the
/// same.
@Suite struct AttributeNamespaceTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    /// One line per file and name: what set, get, list and remove answered.
    static let probe = """
        import errno, os
        def attempt(call):
            try:
                result = call()
                return "ok" if result is None else "ok " + repr(result)
            except OSError as e:
                return errno.errorcode[e.errno]
        for path in ["f", "d"]:
            for name in ["foo.bar", "bogus", "system.x", "os2.x", "userx.a", "user.", "trusted.", "security.",
                         "user.a", "trusted.a", "security.a"]:
                print(path, name, "set", attempt(lambda: os.setxattr(path, name, b"v")),
                      "get", attempt(lambda: os.getxattr(path, name)), "list", sorted(os.listxattr(path)),
                      "remove", attempt(lambda: os.removexattr(path, name)))
        """

    /// What the tools print for a name of an unknown namespace and for an empty one.
    static let tools = """
        touch f && mkdir d
        python3 -c '\(probe.replacingOccurrences(of: "'", with: "'\\''"))'
        for command in "setfattr -n foo.bar -v x f" "getfattr -n foo.bar f" "setfattr -x foo.bar f" "setfattr -n user. -v x d"; do
            $command 2>&1 && echo "status 0" || echo "status $?"
        done
        getfattr -d -m - f d
        """

    static let ext4Answers: String = {
        var lines: [String] = []
        for path in ["f", "d"] {
            for name in ["foo.bar", "bogus", "system.x", "os2.x", "userx.a"] {
                lines.append("\(path) \(name) set ENOTSUP get ENOTSUP list [] remove ENOTSUP")
            }
            for name in ["user.", "trusted.", "security."] { lines.append("\(path) \(name) set EINVAL get EINVAL list [] remove EINVAL") }
            for name in ["user.a", "trusted.a", "security.a"] { lines.append("\(path) \(name) set ok get ok b'v' list ['\(name)'] remove ok") }
        }
        return (lines + ["setfattr: f: Operation not supported", "status 1", "f: foo.bar: Operation not supported", "status 1",
                         "setfattr: f: Operation not supported", "status 1", "setfattr: d: Invalid argument", "status 1"])
            .joined(separator: "\n") + "\n"
    }()

    @Test func unknownNamespacesAreRefusedAsExt4RefusesThem() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let onDisk = try h.mountPoint("ext4")
        if h.sh("stat -f -c %T .", in: onDisk).output == "ext2/ext3\n" {
            #expect(h.sh(Self.tools, in: onDisk).output == Self.ext4Answers, "this machine's ext4 answers otherwise")
        }
        let vault = try h.mountPoint()
        let mounted = h.mount(vault, pattern: Self.pattern)
        try #require(mounted.status == 0, "\(mounted)")
        let answered = h.sh(Self.tools, in: vault)
        #expect(answered.output == Self.ext4Answers, "\(answered)")
        // The attributes kept are still there after a lock.
        h.sh("setfattr -n trusted.kept -v 2 f && setfattr -n user.kept -v 1 f && setfattr -n security.kept -v 3 d", in: vault)
        #expect(h.lock(vault).status == 0)
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        #expect(h.sh("getfattr -d -m - f d", in: vault).output
                == "# file: f\ntrusted.kept=\"2\"\nuser.kept=\"1\"\n\n# file: d\nsecurity.kept=\"3\"\n\n")
        #expect(h.lock(vault).status == 0)
    }
}
