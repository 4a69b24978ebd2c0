import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultFUSE

/// Open files through the kernel: unlink while open, O_APPEND from several processes, parallel
/// writers, and programs that use a folder for real.
@Suite(.serialized) struct OpenFileTests {
    @Test func unlinkedOpenFileStaysUsable() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        let data = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        try harness.withMount(at: vault) { _ throws in
            let path = vault + "/doomed"
            let descriptor = open(path, O_CREAT | O_RDWR | O_TRUNC, 0o644)
            try #require(descriptor >= 0)
            defer { close(descriptor) }
            #expect(write(descriptor, data, data.count) == data.count)
            #expect(unlink(path) == 0)
            #expect(access(path, F_OK) == -1 && errno == ENOENT)
            var status = stat()
            #expect(fstat(descriptor, &status) == 0)
            #expect(status.st_nlink == 0)
            #expect(status.st_size == data.count)
            var back = [UInt8](repeating: 0, count: data.count)
            #expect(pread(descriptor, &back, back.count, 0) == data.count)
            #expect(back == data)
            #expect(pwrite(descriptor, "xyz", 3, 299_999) == 3)
            var tail = [UInt8](repeating: 0, count: 4)
            #expect(pread(descriptor, &tail, 4, 299_998) == 4)
            #expect(tail == [data[299_998]] + Array("xyz".utf8))
            #expect(fsync(descriptor) == 0)
        }
        try harness.withMount(at: vault) { _ throws in
            #expect(try shell("ls -A", in: vault) == "")
        }
    }

    @Test func appendsFromSeveralProcessesAllLand() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        try harness.withMount(at: vault) { _ throws in
            try shell("for p in 1 2 3 4; do (for i in $(seq 100); do echo \"$p $i\" >> log; done) & done; wait", in: vault)
            #expect(try shell("wc -l < log && sort -u log | wc -l", in: vault) == "400\n400\n")
            try shell("for p in 1 2 3; do head -c 3M /dev/urandom > \(harness.base)/r$p; done")
            try shell("for p in 1 2 3; do dd if=\(harness.base)/r$p of=f$p bs=64k status=none & done; wait", in: vault)
            try shell("for p in 1 2 3; do cmp \(harness.base)/r$p f$p; done", in: vault)
        }
        try harness.withMount(at: vault) { _ throws in
            #expect(try shell("sort -u log | wc -l", in: vault) == "400\n")
            try shell("for p in 1 2 3; do cmp \(harness.base)/r$p f$p; done", in: vault)
        }
    }

    @Test func programsThatUseTheFolderForReal() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        let source = RealToolTests.sourceTree
        try harness.withMount(at: vault) { _ throws in
            let m = vault
            try shell("rsync -a \(source)/ synced/ && diff -r --no-dereference \(source) synced", in: m)
            try shell("sqlite3 db.sqlite 'create table t(a, b); insert into t values (1, \"one\"), (2, \"two\");'", in: m)
            #expect(try shell("sqlite3 db.sqlite 'select b from t order by a'", in: m) == "one\ntwo\n")
            try shell("""
                git init -q repo && cd repo && git config user.email t@example.com && git config user.name t && \
                echo hello > a && git add a && git commit -qm one && echo world >> a && git commit -qam two && \
                git log --oneline | wc -l
                """, in: m)
            // Editors save by writing a new file and renaming it over the old one.
            try shell("echo v1 > doc && echo v2 > .doc.swp && mv .doc.swp doc", in: m)
        }
        try harness.withMount(at: vault) { _ throws in
            let m = vault
            try shell("diff -r --no-dereference \(source) synced", in: m)
            #expect(try shell("sqlite3 db.sqlite 'select count(*) from t'", in: m) == "2\n")
            #expect(try shell("cd repo && git fsck --no-progress 2>&1 && git log --format=%s", in: m) == "two\none\n")
            #expect(try shell("cat doc", in: m) == "v2\n")
        }
    }
}
