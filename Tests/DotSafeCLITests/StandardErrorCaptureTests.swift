import Foundation
import Glibc
import Synchronization
import SystemCalls
import Testing

/// `capturingStandardError` moves the process's descriptor 2 while libfuse mounts. In one
/// process several mounts can start at once (the tests mount in-process): two captures that
/// overlap must neither read each other's text nor leave descriptor 2 on a memory file. Run 40
/// of session 48 lost every later line of Swift Testing's that way, and reported a pass.
@Suite struct StandardErrorCaptureTests {
    @Test func capturesAtOnceEachReadTheirOwnAndPutStandardErrorBack() throws {
        let before = try Self.identity(of: 2)
        let crossed = Mutex(0), missing = Mutex(0)
        let threads = 4, rounds = 150
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for round in 0..<rounds {
                let token = "capture-test \(thread)-\(round)"
                let (_, text) = ProcessCalls.capturingStandardError {
                    _ = Array((token + "\n").utf8).withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
                    usleep(100)
                }
                let lines = (text ?? "").split(separator: "\n").map(String.init)
                if !lines.contains(token) { missing.withLock { $0 += 1 } }
                if lines.contains(where: { $0.hasPrefix("capture-test ") && $0 != token }) { crossed.withLock { $0 += 1 } }
                // What other tests said meanwhile goes where it would have gone.
                for line in lines where !line.hasPrefix("capture-test ") {
                    _ = Array((line + "\n").utf8).withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
                }
            }
        }
        #expect(try Self.identity(of: 2) == before, "descriptor 2 was left on another file")
        #expect(missing.withLock { $0 } == 0, "captures that lost their own text")
        #expect(crossed.withLock { $0 } == 0, "captures that read another capture's text")
    }

    private static func identity(of descriptor: Int32) throws -> [UInt64] {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw POSIXError(.EBADF) }
        return [UInt64(status.st_dev), UInt64(status.st_ino)]
    }
}
