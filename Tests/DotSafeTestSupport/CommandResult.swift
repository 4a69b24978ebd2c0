import Foundation
import Testing

/// A program run to completion.
public struct CommandResult: CustomStringConvertible, Sendable {
    public var status: Int32
    public var output: String
    public var error: String

    public init(status: Int32, output: String, error: String) {
        self.status = status; self.output = output; self.error = error
    }

    public var succeeded: Bool { status == 0 }
    public var description: String { "status \(status)\n--- stdout\n\(output)\n--- stderr\n\(error)" }

    /// Runs `executable` with `input` on its standard input (none: an empty one) and both outputs
    /// captured. A program that cannot be started gives status -1 and the reason as its error.
    public static func run(_ executable: String, _ arguments: [String], input: String? = nil, folder: String? = nil,
                           environment: [String: String] = ProcessInfo.processInfo.environment) -> CommandResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        if let folder { process.currentDirectoryURL = URL(fileURLWithPath: folder) }
        let output = Pipe(), error = Pipe(), stdin = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = stdin
        do { try process.run() } catch { return CommandResult(status: -1, output: "", error: "\(error)") }
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        try? stdin.fileHandleForWriting.close()
        // Read both pipes to the end before waiting: a full pipe would block the child.
        let group = DispatchGroup()
        nonisolated(unsafe) var out = Data()
        group.enter()
        DispatchQueue.global().async { out = output.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        let err = error.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        try? output.fileHandleForReading.close()
        try? error.fileHandleForReading.close()
        return CommandResult(status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
                             error: String(decoding: err, as: UTF8.self))
    }
}

/// Runs a program found on PATH (through /usr/bin/env) in the C locale, with an optional
/// working folder and extra environment.
@discardableResult
public func run(_ arguments: [String], in folder: String? = nil, environment extra: [String: String] = [:]) throws -> CommandResult {
    var environment = ProcessInfo.processInfo.environment
    environment["LC_ALL"] = "C"
    environment.merge(extra) { $1 }
    let result = CommandResult.run("/usr/bin/env", arguments, folder: folder, environment: environment)
    guard result.status != -1 else { throw HarnessError("cannot run \(arguments.first ?? ""): \(result.error)") }
    return result
}

/// Runs a bash command line (with pipefail, in UTC) and requires it to succeed; returns its
/// standard output.
@discardableResult
public func shell(_ command: String, in folder: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
    let result = try run(["bash", "-c", "set -o pipefail; " + command], in: folder, environment: ["TZ": "UTC"])
    #expect(result.succeeded, "\(command) failed (\(result.status)): \(result.error)", sourceLocation: sourceLocation)
    guard result.succeeded else { throw HarnessError("\(command): \(result.error)") }
    return result.output
}

public struct HarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
