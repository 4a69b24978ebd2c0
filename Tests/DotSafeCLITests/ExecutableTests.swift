import DotSafeTestSupport
import Foundation
import Testing

/// The built `dotsafe` executable, run as a process: `main.swift` wires the real streams and
/// exit status. The executable sits in the same folder as the test binary.
@Suite struct ExecutableTests {
    /// Runs the `dotsafe` built next to the test binary, without the caller's keyring.
    static func run(_ arguments: [String]) throws -> CommandResult {
        try #require(FileManager.default.isExecutableFile(atPath: MountHarness.binary),
                     "build the dotsafe executable first (swift build): not at \(MountHarness.binary)")
        var environment = ProcessInfo.processInfo.environment
        environment["DOTSAFE_KEYRING"] = nil
        return CommandResult.run(MountHarness.binary, arguments, environment: environment)
    }

    @Test func unknownOptionExitsWithUsageError() throws {
        let result = try Self.run(["--frob"])
        #expect(result.status == 64)
        #expect(result.output == "")
        #expect(result.error == "dotsafe: unknown option '--frob'\nTry 'dotsafe help'.\n")
    }

    @Test func versionPrintsToStandardOutput() throws {
        let result = try Self.run(["--version"])
        #expect(result.status == 0)
        #expect(result.output == "dotsafe 0.1.0\n")
        #expect(result.error == "")
    }
}
