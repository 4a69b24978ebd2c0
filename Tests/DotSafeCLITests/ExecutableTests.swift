import Foundation
import Testing

/// The built `dotsafe` executable, run as a process: `main.swift` wires the real streams and
/// exit status. The executable sits in the same folder as the test binary.
@Suite struct ExecutableTests {
    struct Result {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    static func dotsafeExecutable() throws -> URL {
        let testBinary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let executable = URL(fileURLWithPath: testBinary).deletingLastPathComponent().appendingPathComponent("dotsafe")
        try #require(FileManager.default.isExecutableFile(atPath: executable.path),
                     "build the dotsafe executable first (swift build): not at \(executable.path)")
        return executable
    }

    static func run(_ arguments: [String]) throws -> Result {
        let process = Process()
        process.executableURL = try dotsafeExecutable()
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["DOTSAFE_KEYRING"] = nil
        process.environment = environment
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus,
                      standardOutput: String(decoding: outputData, as: UTF8.self),
                      standardError: String(decoding: errorData, as: UTF8.self))
    }

    @Test func unknownOptionExitsWithUsageError() throws {
        let result = try Self.run(["--frob"])
        #expect(result.status == 64)
        #expect(result.standardOutput == "")
        #expect(result.standardError == "dotsafe: unknown option '--frob'\nTry 'dotsafe help'.\n")
    }

    @Test func versionPrintsToStandardOutput() throws {
        let result = try Self.run(["--version"])
        #expect(result.status == 0)
        #expect(result.standardOutput == "dotsafe 0.1.0\n")
        #expect(result.standardError == "")
    }
}
