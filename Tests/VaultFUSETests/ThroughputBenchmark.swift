import Foundation
import Testing

/// Throughput figures on a real mount; skipped unless DOTSAFE_BENCH=1 (meaningful in a release
/// build: `swift build -c release --build-tests`, then run the test binary with
/// `--filter ThroughputBenchmark`).
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["DOTSAFE_BENCH"] == "1"))
struct ThroughputBenchmark {
    @Test func ddThroughput() throws {
        let harness = try MountHarness()
        defer { harness.removeFolder() }
        let source = harness.folder + "/random.bin"
        try shell("head -c 256M /dev/urandom > \(source)")
        try harness.withMount { _ throws in
            let write = try run(["dd", "if=\(source)", "of=big", "bs=1M"], in: harness.mountPoint)
            let start = Date()
            try shell("sync big", in: harness.mountPoint)
            let commit = Date().timeIntervalSince(start)
            let warm = try run(["dd", "if=big", "of=/dev/null", "bs=1M"], in: harness.mountPoint)
            let small = try run(["dd", "if=\(source)", "of=small", "bs=4k", "count=16384"], in: harness.mountPoint)
            print("256 MiB bs=1M write: \(RealToolTests.rate(write.error)); then fsync (commit): \(commit) s; read: \(RealToolTests.rate(warm.error))")
            print("64 MiB bs=4k write: \(RealToolTests.rate(small.error))")
        }
        try harness.withMount { _ throws in
            let cold = try run(["dd", "if=big", "of=/dev/null", "bs=1M"], in: harness.mountPoint)
            print("256 MiB bs=1M read after remount (decrypting): \(RealToolTests.rate(cold.error))")
        }
    }
}
