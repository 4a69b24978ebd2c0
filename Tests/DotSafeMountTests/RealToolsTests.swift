import DotSafeTestSupport
import Foundation
import Testing

/// Ordinary tools on a real mount, then lock, mount again, and compare everything (issue 4).
@Suite(.serialized) struct RealToolsTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    @Test func everydayToolsSurviveLockAndRemount() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        let mounted = h.mount(vault, pattern: Self.pattern)
        try #require(mounted.status == 0, "\(mounted)")
        #expect(MountHarness.isMounted(vault))
        let tree = "/usr/include/openssl"
        h.sh("""
            cp -a \(tree) tree && diff -r \(tree) tree
            rsync -a \(tree)/ synced/ && diff -r \(tree) synced
            tar -C /usr/include -cf - openssl | tar -xf - -C . --transform s/^openssl/untarred/ && diff -r \(tree) untarred
            tar -cf tree.tar tree && mkdir re && tar -xf tree.tar -C re && diff -r \(tree) re/tree
            """, in: vault)
        h.sh("""
            mkdir repo && cd repo && git init -q && git config user.email t@e && git config user.name t
            cp -a \(tree)/*.h . && git add -A && git commit -qm one && echo change >> evp.h && git commit -qam two
            git fsck --full --strict && test "$(git rev-list --count HEAD)" = 2
            """, in: vault)
        h.sh("""
            sqlite3 db.sqlite 'create table t(id integer primary key, v text);'
            for batch in 1 2 3 4 5; do
              (echo 'begin;'; for i in $(seq 1 1000); do echo "insert into t(v) values('row $batch $i');"; done; echo 'commit;') | sqlite3 db.sqlite
            done
            test "$(sqlite3 db.sqlite 'pragma integrity_check;')" = ok
            test "$(sqlite3 db.sqlite 'select count(*) from t;')" = 5000
            """, in: vault)
        h.sh("""
            dd if=/dev/urandom of=big.bin bs=1M count=200 status=none conv=fsync
            sha256sum big.bin > big.sha && sha256sum -c --quiet big.sha
            truncate -s 1T sparse && test "$(stat -c %s sparse)" = 1099511627776
            truncate -s 100 big2 && test "$(stat -c %s big2)" = 100
            ln -s tree/evp.h link && test "$(readlink link)" = tree/evp.h && cmp link \(tree)/evp.h
            ln tree/evp.h hard && test "$(stat -c %h hard)" = 2
            setfattr -n user.tag -v red tree/evp.h && test "$(getfattr --only-values -n user.tag tree/evp.h)" = red
            echo old > target && echo new > source && mv source target && test "$(cat target)" = new
            mkdir -p d1/sub && mv d1 d2 && test -d d2/sub
            df -P . | tail -1 | awk '{ exit !($2 > 0) }'
            touch -d '2001-02-03 04:05:06' dated && test "$(stat -c %Y dated)" = "$(date -d '2001-02-03 04:05:06' +%s)"
            chmod 640 target && test "$(stat -c %a target)" = 640
            mkfifo fifo && test -p fifo
            find . -path ./repo -prune -o -type f ! -name sparse -print0 | sort -z | xargs -0 sha256sum > ../sums
            """, in: vault)
        let locked = h.lock(vault)
        try #require(locked.status == 0, "\(locked)")
        #expect(!MountHarness.isMounted(vault))
        #expect(try FileManager.default.contentsOfDirectory(atPath: vault).isEmpty)

        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("""
            sha256sum -c --quiet ../sums
            diff -r \(tree) tree && diff -r \(tree) synced && diff -r \(tree) untarred
            cd repo && git fsck --full --strict && cd ..
            test "$(sqlite3 db.sqlite 'pragma integrity_check;')" = ok && test "$(sqlite3 db.sqlite 'select count(*) from t;')" = 5000
            test "$(stat -c %s sparse)" = 1099511627776 && test "$(readlink link)" = tree/evp.h && test "$(stat -c %h hard)" = 2
            test "$(getfattr --only-values -n user.tag tree/evp.h)" = red && test "$(cat target)" = new && test -d d2/sub && test -p fifo
            test "$(stat -c %a target)" = 640
            """, in: vault)
        #expect(h.lock(vault).status == 0)
    }
}
