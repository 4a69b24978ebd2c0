import DotSafeTestSupport
import Foundation
import Testing

/// Throughput figures on a real mount; skipped unless DOTSAFE_BENCH=1 (meaningful in a release
/// build: `swift build -c release --build-tests`, then run the test binary with
/// `--filter ThroughputBenchmark`).
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["DOTSAFE_BENCH"] == "1"))
struct ThroughputBenchmark {
    @Test func ddThroughput() throws {
        let harness = try MountHarness(.inProcess)
        defer { harness.finish() }
        let vault = try harness.mountPoint()
        let source = harness.base + "/random.bin"
        try shell("head -c 256M /dev/urandom > \(source)")
        try harness.withMount(at: vault) { _ throws in
            let write = try run(["dd", "if=\(source)", "of=big", "bs=1M"], in: vault)
            let start = Date()
            try shell("sync big", in: vault)
            let commit = Date().timeIntervalSince(start)
            let warm = try run(["dd", "if=big", "of=/dev/null", "bs=1M"], in: vault)
            let small = try run(["dd", "if=\(source)", "of=small", "bs=4k", "count=16384"], in: vault)
            print("256 MiB bs=1M write: \(RealToolTests.rate(write.error)); then fsync (commit): \(commit) s; read: \(RealToolTests.rate(warm.error))")
            print("64 MiB bs=4k write: \(RealToolTests.rate(small.error))")
        }
        try harness.withMount(at: vault) { _ throws in
            let cold = try run(["dd", "if=big", "of=/dev/null", "bs=1M"], in: vault)
            print("256 MiB bs=1M read after remount (decrypting): \(RealToolTests.rate(cold.error))")
        }
    }
}
