import Foundation
import Glibc

/// `.binary` mode: the built `dotsafe`, run the way a user runs it.
extension MountHarness {
    /// The `dotsafe` built next to the test binary.
    public static var binary: String {
        let folder = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        return folder.appendingPathComponent("dotsafe").path
    }

    @discardableResult
    public func dotsafe(_ arguments: [String], input: String? = nil) -> CommandResult {
        run(Self.binary, arguments, input: input)
    }

    /// Mounts with the pattern on standard input. `dotsafe mount` returns once its daemon is
    /// ready; a mount it reports must then be listed by the kernel. `environment` adds to the
    /// harness's (a test's own system log socket, say).
    @discardableResult
    public func mount(_ mountPoint: String, pattern: String, options: [String] = [],
                      environment extra: [String: String] = [:]) -> CommandResult {
        let result = CommandResult.run(Self.binary, ["mount", storage, mountPoint, "--pattern-stdin"] + options, input: pattern + "\n",
                                       environment: environment.merging(extra) { $1 })
        if result.status == 0 {
            _ = mounted.withLock { $0.insert(mountPoint) }
            guard Self.waitUntil(mounted: true, mountPoint) else {
                return CommandResult(status: -1, output: result.output, error: result.error + "\nharness: not in /proc/mounts")
            }
        }
        return result
    }

    /// Starts `dotsafe mount -f` with the pattern on its standard input, its standard output a
    /// pipe the caller reads and its standard error `standardError`; tracked for `finish()`.
    /// `options` and `environment` add to the mount's and the harness's, as for `mount`.
    public func startForeground(_ mountPoint: String, pattern: String, standardError: FileHandle, options: [String] = [],
                                environment extra: [String: String] = [:]) throws -> (process: Process, output: Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["mount", storage, mountPoint, "--pattern-stdin", "-f"] + options
        process.environment = environment.merging(extra) { $1 }
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = standardError
        try process.run()
        track(mountPoint)
        input.fileHandleForWriting.write(Data((pattern + "\n").utf8))
        return (process, output)
    }

    /// A mount the test made another way (under script(1), say): `finish()` removes it if left.
    public func track(_ mountPoint: String) {
        _ = mounted.withLock { $0.insert(mountPoint) }
    }

    /// `dotsafe lock`; once it succeeds, the daemon of that mount must be gone.
    @discardableResult
    public func lock(_ mountPoint: String) -> CommandResult {
        let result = dotsafe(["lock", mountPoint])
        if result.status == 0 {
            _ = mounted.withLock { $0.remove(mountPoint) }
            guard waitFor(seconds: 10, { Self.daemonPID(for: mountPoint) == nil }) else {
                return CommandResult(status: -1, output: result.output, error: result.error + "\nharness: the daemon is still running")
            }
        }
        return result
    }

    /// The daemon serving a mount point: the process whose command line names it.
    public static func daemonPID(for mountPoint: String) -> Int32? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry), pid != getpid(),
                  let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
            let words = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if words.contains("mount") && words.contains(mountPoint) && words.first?.hasSuffix("dotsafe") == true { return pid }
        }
        return nil
    }
}
