import DotSafeTestSupport
import Foundation
import Testing

/// Pages on demand through a real mount (issue 17, step 6c): an index-3 vault of several
/// leaves, mounted with its index held in part (`DOTSAFE_INDEX_ON_DEMAND=1`, with the tests'
/// switch `DOTSAFE_INDEX_THREE=1`), takes ordinary tools; mounted whole afterwards it holds
/// exactly what they left, and fsck finds every record of §15.6 exact.
@Suite(.serialized) struct OnDemandMountTests {
    static let pattern = "a1-b2-c3-d4-e5-e4"

    @Test func ordinaryToolsOnAVaultHeldInPart() throws {
        let h = try MountHarness(environment: ["DOTSAFE_INDEX_THREE": "1"])
        defer { h.finish() }
        let vault = try h.mountPoint()
        let trees = "linux openssl x86_64-linux-gnu c++"
        // Whole: some 6,000 items, several leaves.
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("""
            mkdir inc && for t in \(trees); do cp -a /usr/include/$t inc/; done
            mkdir many && cd many && seq -f 'f%g' 1 4000 | xargs touch && echo one > f17
            """, in: vault)
        h.sh("mkdir expected && for t in \(trees); do cp -a /usr/include/$t expected/; done", in: h.base)
        try #require(h.lock(vault).status == 0)

        let inPart = ["DOTSAFE_INDEX_ON_DEMAND": "1"]
        try #require(h.mount(vault, pattern: Self.pattern, environment: inPart).status == 0)
        h.sh("""
            diff -r ../expected inc && test "$(ls many | wc -l)" = 4000 && test "$(cat many/f17)" = one
            test "$(find inc -type d | wc -l)" = "$(find ../expected -type d | wc -l)"
            test "$(stat -c %h inc)" = 6
            mv inc/openssl inc/linux/moved && mv ../expected/openssl ../expected/linux/moved
            rm -r inc/c++ ../expected/c++ && rm many/f1*
            echo changed >> inc/linux/moved/evp.h && echo changed >> ../expected/linux/moved/evp.h
            dd if=/dev/urandom of=../expected/big bs=1M count=3 status=none && cp ../expected/big inc/big
            ln -s linux/moved inc/link && ln -s linux/moved ../expected/link
            diff -r ../expected inc
            """, in: vault)
        #expect(h.lock(vault).status == 0)

        // Held in part again, then whole: what the tools left, and the records exact.
        try #require(h.mount(vault, pattern: Self.pattern, environment: inPart).status == 0)
        h.sh("diff -r ../expected inc && test \"$(ls many | wc -l)\" = 2889", in: vault)
        #expect(h.lock(vault).status == 0)
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("diff -r ../expected inc && test \"$(ls many | wc -l)\" = 2889 && test \"$(stat -c %h inc)\" = 4", in: vault)
        #expect(h.lock(vault).status == 0)
        let fsck = h.dotsafe(["fsck", h.storage, "--pattern-stdin"], input: Self.pattern + "\n")
        #expect(fsck.status == 0, "\(fsck)")
    }
}
