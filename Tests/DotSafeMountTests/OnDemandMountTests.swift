import DotSafeTestSupport
import Foundation
import Testing

/// Pages on demand through a real mount (issue 17, step 6c): a vault of index 2 converted by
/// its first change, of several leaves, mounted as `dotsafe mount` does (its index held in part) with a budget of 2 leaves,
/// takes ordinary tools; mounted whole afterwards (the tests' switch `DOTSAFE_INDEX_ON_DEMAND=0`)
/// it holds exactly what they left, and fsck finds every record of §15.6 exact.
@Suite(.serialized) struct OnDemandMountTests {
    static let pattern = "a1-b2-c3-d4-e5-e4"

    @Test func ordinaryToolsOnAVaultHeldInPart() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        let trees = "linux openssl x86_64-linux-gnu c++"
        // Written by a release of index 2: some 6,000 items.
        let indexTwo = ["DOTSAFE_INDEX_THREE": "0"], whole = ["DOTSAFE_INDEX_ON_DEMAND": "0"]
        try #require(h.mount(vault, pattern: Self.pattern, environment: indexTwo).status == 0)
        h.sh("""
            mkdir inc && for t in \(trees); do cp -a /usr/include/$t inc/; done
            mkdir many && cd many && seq -f 'f%g' 1 4000 | xargs touch && echo one > f17
            """, in: vault)
        h.sh("mkdir expected && for t in \(trees); do cp -a /usr/include/$t expected/; done", in: h.base)
        try #require(h.lock(vault).status == 0)
        // Today's mount converts it to index 3 (several leaves) at its first change; the
        // earlier release then refuses it, writing nothing.
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("touch inc/converted && touch ../expected/converted", in: vault)
        try #require(h.lock(vault).status == 0)
        let before = try FileManager.default.contentsOfDirectory(atPath: h.storage).sorted()
        let older = CommandResult.run(MountHarness.binary, ["fsck", h.storage, "--pattern", Self.pattern],
                                      environment: h.environment.merging(indexTwo) { $1 })
        #expect(older.status == 1 && older.error.contains("made by a newer DotSafe (format version 3)"), "\(older)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: h.storage).sorted() == before)

        // With 2 leaves kept between calls: each walk loads and unloads leaves as it goes.
        try #require(h.mount(vault, pattern: Self.pattern, options: ["--index-cache", "2"]).status == 0)
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
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("diff -r ../expected inc && test \"$(ls many | wc -l)\" = 2889", in: vault)
        #expect(h.lock(vault).status == 0)
        try #require(h.mount(vault, pattern: Self.pattern, environment: whole).status == 0)
        h.sh("diff -r ../expected inc && test \"$(ls many | wc -l)\" = 2889 && test \"$(stat -c %h inc)\" = 4", in: vault)
        #expect(h.lock(vault).status == 0)
        let fsck = h.dotsafe(["fsck", h.storage, "--pattern-stdin"], input: Self.pattern + "\n")
        #expect(fsck.status == 0, "\(fsck)")
    }
}
