import DotSafeTestSupport
import Foundation
import Testing

/// The Debian package, built, installed, used and removed by tools/package-test (minutes of
/// work: a static release build, apt-get, lintian). Runs only when DOTSAFE_PACKAGE_TEST=1,
/// which tools/test sets when it runs every test, so a `tools/test --filter` run builds no
/// package. Its own run: `DOTSAFE_PACKAGE_TEST=1 tools/test --filter PackageTests`.
@Suite struct PackageTests {
    static let enabled = ProcessInfo.processInfo.environment["DOTSAFE_PACKAGE_TEST"] == "1"

    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    @Test(.enabled(if: enabled, "set DOTSAFE_PACKAGE_TEST=1 (tools/test does when run with no arguments)"),
          .timeLimit(.minutes(20)))
    func packageInstallsMountsAndRemoves() throws {
        let h = try MountHarness(initialise: false)
        defer { h.finish() }
        let script = Self.repository.appendingPathComponent("tools/package-test").path
        let result = h.run("/bin/bash", [script], input: nil)
        // The lintian warnings and timings go into the test log either way.
        print(result.output + result.error, terminator: "")
        #expect(result.status == 0, "tools/package-test failed:\n\(result)")
        #expect(result.output.contains("package-test: passed"))
    }
}
