import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultFileSystem
import VaultFUSE

/// Real in-process mounts on a real storage, used by real tools; then mounted again with the
/// same secrets, where everything must be byte-identical. Serialized: the mounts are heavy and
/// the figures printed are meant to be comparable.
@Suite(.serialized) struct RealToolTests {
    /// A small real tree with files, folders and symbolic links.
    static let sourceTree = FileManager.default.fileExists(atPath: "/etc/ssl") ? "/etc/ssl" : "/usr/share/doc/bash"

    /// Every entry's type, mode, owner, size, mtime (ns), link target: what `cp -a` keeps.
    static func listing(_ root: String) throws -> String {
        try shell("find . -printf '%y %m %U %G %s %T@ %p -> %l\\n' | grep -v '^d.* \\.$' | sort -k7", in: root)
            .split(separator: "\n").map { line in
                // A folder's size is the file system's business, not content.
                line.hasPrefix("d ") ? line.split(separator: " ").enumerated().map { $0.offset == 4 ? "-" : String($0.element) }
                    .joined(separator: " ") : String(line)
            }.joined(separator: "\n")
    }

    @Test func copyTreeCompareAndRemount() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        let source = Self.sourceTree
        let expected = try Self.listing(source)
        try harness.withMount(at: vault) { _ throws in
            try shell("cp -a \(source) tree", in: vault)
            try shell("diff -r --no-dereference \(source) tree", in: vault)
            #expect(try Self.listing(vault + "/tree") == expected)
        }
        try harness.withMount(at: vault) { _ throws in
            try shell("diff -r --no-dereference \(source) tree", in: vault)
            #expect(try Self.listing(vault + "/tree") == expected)
            // Another program that uses the folder for real.
            try shell("tar -cf - tree | tar -C \(harness.base) -xf - && diff -r --no-dereference tree \(harness.base)/tree",
                      in: vault)
            try shell("rm -rf tree && test ! -e tree", in: vault)
        }
        try harness.withMount(at: vault) { _ throws in
            #expect(try shell("ls -A", in: vault) == "")
        }
    }

    @Test func largeFileWithDdAndSparseFileWithTruncate() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        let source = harness.base + "/random.bin"
        try shell("head -c 64M /dev/urandom > \(source)")
        try harness.withMount(at: vault) { _ throws in
            let written = try run(["dd", "if=\(source)", "of=big", "bs=1M", "conv=fsync"], in: vault)
            #expect(written.succeeded, "\(written.error)")
            let read = try run(["dd", "if=big", "of=/dev/null", "bs=1M"], in: vault)
            #expect(read.succeeded, "\(read.error)")
            print("dd on the mount, 64 MiB: write \(Self.rate(written.error)) (with fsync), read \(Self.rate(read.error))")
            try shell("cmp \(source) big", in: vault)
            #expect(try shell("stat -c %s big", in: vault) == "67108864\n")

            try shell("truncate -s 1T sparse", in: vault)
            #expect(try shell("stat -c %s sparse", in: vault) == "1099511627776\n")
            try shell("printf end | dd of=sparse bs=1 seek=1099511627773 conv=notrunc status=none", in: vault)
            try shell("truncate -s 100K shrink && printf abc >> shrink && truncate -s 50000 shrink && truncate -s 300K shrink",
                      in: vault)
        }
        try harness.withMount(at: vault) { _ throws in
            try shell("cmp \(source) big", in: vault)
            #expect(try shell("stat -c %s sparse", in: vault) == "1099511627776\n")
            #expect(try shell("tail -c 3 sparse", in: vault) == "end")
            #expect(try shell("dd if=sparse bs=4096 skip=268435455 count=1 status=none | tr -d '\\000' | od -c",
                              in: vault) == "0000000   e   n   d\n0000003\n")
            #expect(try shell("dd if=sparse bs=1M skip=12345 count=1 status=none | tr -d '\\000' | wc -c",
                              in: vault) == "0\n")
            // Truncated down, then up: the cut bytes read as zeros.
            #expect(try shell("stat -c %s shrink && tr -d '\\000' < shrink | wc -c", in: vault) == "307200\n0\n")
        }
    }

    @Test func linksAttributesTimesAndRenames() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        try harness.withMount(at: vault) { _ throws in
            let m = vault
            try shell("echo content > a && ln a b && mkdir d && ln a d/c", in: m)
            #expect(try shell("stat -c %h a b d/c", in: m) == "3\n3\n3\n")
            try shell("rm b", in: m)
            #expect(try shell("stat -c %h a", in: m) == "2\n")
            #expect(try shell("test $(stat -c %i a) = $(stat -c %i d/c) && echo same", in: m) == "same\n")

            try shell("ln -s a link && ln -s /no/such/target dangling && ln -s ../a d/up", in: m)
            #expect(try shell("readlink link dangling d/up && cat d/up", in: m) == "a\n/no/such/target\n../a\ncontent\n")

            try shell("setfattr -n user.color -v red a && setfattr -n user.empty d && setfattr -n user.bin -v 0x00ff00 a", in: m)
            #expect(try shell("getfattr --only-values -n user.color a", in: m) == "red")
            #expect(try shell("getfattr -d -e hex a | grep bin", in: m) == "user.bin=0x00ff00\n")
            try shell("setfattr -x user.color a", in: m)
            let missing = try run(["getfattr", "-n", "user.color", "a"], in: m)
            #expect(!missing.succeeded && missing.error.contains("No such attribute"), "\(missing.error)")
            let big = String(repeating: "x", count: 4000)
            try shell("setfattr -n user.big -v \(big) a", in: m)

            try shell("echo old > target && echo new > source && mv source target", in: m)
            #expect(try shell("cat target && ls", in: m) == "new\na\nd\ndangling\nlink\ntarget\n")
            try shell("mkdir -p x/y && mkdir z && mv x z/ && test -d z/x/y", in: m)
            let notEmpty = try run(["rmdir", "z"], in: m)
            #expect(!notEmpty.succeeded && notEmpty.error.contains("Directory not empty"), "\(notEmpty.error)")

            try shell("touch -d '2001-02-03 04:05:06.123456789' a && touch -m -d '1999-12-31 23:59:59.5' d", in: m)
            #expect(try shell("stat -c '%y' a", in: m) == "2001-02-03 04:05:06.123456789 +0000\n")
            try shell("touch -a d/c", in: m)  // atime only: mtime stays
            #expect(try shell("stat -c '%y' a", in: m) == "2001-02-03 04:05:06.123456789 +0000\n")

            try shell("chmod 640 a && chown 1234:5678 a && mkfifo pipe && mknod chr c 1 3", in: m)
            #expect(try shell("stat -c '%a %u %g' a && stat -c '%F %t:%T' pipe chr", in: m)
                    == "640 1234 5678\nfifo 0:0\ncharacter special file 1:3\n")
            try shell("echo one > log && echo two >> log", in: m)
        }
        try harness.withMount(at: vault) { _ throws in
            let m = vault
            #expect(try shell("stat -c %h a d/c && cat d/c", in: m) == "2\n2\ncontent\n")
            #expect(try shell("readlink link dangling d/up", in: m) == "a\n/no/such/target\n../a\n")
            #expect(try shell("getfattr --only-values -n user.bin a | od -An -tx1", in: m) == " 00 ff 00\n")
            #expect(try shell("getfattr --only-values -n user.big a | wc -c", in: m) == "4000\n")
            #expect(try shell("stat -c '%y' a d", in: m)
                    == "2001-02-03 04:05:06.123456789 +0000\n1999-12-31 23:59:59.500000000 +0000\n")
            #expect(try shell("cat target log", in: m) == "new\none\ntwo\n")
            #expect(try shell("stat -c '%a %u %g' a && stat -c '%F %t:%T' pipe chr", in: m)
                    == "640 1234 5678\nfifo 0:0\ncharacter special file 1:3\n")
            #expect(try shell("test -d z/x/y && echo ok", in: m) == "ok\n")
        }
    }

    @Test func dfAndStatfsComeFromTheStorageDisk() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        try harness.withMount(at: vault) { _ throws in
            let df = try shell("df -P -B4096 \(vault) | tail -1")
            #expect(df.hasPrefix("dotsafe "), "\(df)")
            let fields = df.split(separator: " ")
            let disk = try shell("df -P -B4096 \(harness.storage) | tail -1").split(separator: " ")
            // The vault reports the storage disk's space, scaled to payload (0.02 % less).
            let total = Double(fields[1])!, diskTotal = Double(disk[1])!
            #expect(total <= diskTotal && total > diskTotal * 0.999)
            #expect(try shell("stat -f -c '%S %l' \(vault)") == "4096 255\n")
            try shell("touch a b c && mkdir d", in: vault)
            let inodes = try shell("df -P -i \(vault) | tail -1").split(separator: " ")
            #expect(inodes[2] == "5", "\(inodes)")
        }
    }
}

extension RealToolTests {
    /// The rate at the end of dd's summary ("…, 0.5 s, 134 MB/s").
    static func rate(_ summary: String) -> String {
        summary.split(separator: "\n").last?.split(separator: ",").last?.trimmingCharacters(in: .whitespaces) ?? "?"
    }
}
