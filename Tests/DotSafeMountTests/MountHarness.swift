import Foundation
import Glibc
import Testing

/// Runs the real `dotsafe` binary against a real storage and mount point, the way a user does:
/// `init`, `mount` (pattern on standard input), ordinary tools on the mount, `lock`. Everything
/// lives in one folder under $TMPDIR named `dotsafe-test-…`; `finish()` unmounts whatever is
/// still mounted, so a failing test leaves no mount behind (tools/test checks).
final class MountHarness: @unchecked Sendable {
    // One test uses a harness, from one thread.
    let base: String
    let storage: String
    let environment: [String: String]
    private var mounted: Set<String> = []

    static var binary: String {
        let folder = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        return folder.appendingPathComponent("dotsafe").path
    }

    init(initialise: Bool = true) throws {
        let tmp = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        base = tmp + "/dotsafe-test-mount-\(UUID().uuidString.prefix(8))"
        storage = base + "/storage"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        var environment = ProcessInfo.processInfo.environment
        environment["DOTSAFE_KEYRING"] = base + "/keyring"
        environment["DOTSAFE_ALLOW_WEAK_KDF"] = "1"
        environment["DOTSAFE_KDF_ROUNDS"] = "1000"
        self.environment = environment
        if initialise {
            let result = dotsafe(["init", storage])
            guard result.status == 0 else { throw HarnessError("init failed: \(result)") }
        }
    }

    /// A new empty folder to mount on.
    func mountPoint(_ name: String = "vault") throws -> String {
        let path = base + "/" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @discardableResult
    func dotsafe(_ arguments: [String], input: String? = nil) -> CommandResult {
        run(Self.binary, arguments, input: input)
    }

    /// Mounts with the pattern on standard input; returns when `dotsafe mount` does.
    @discardableResult
    func mount(_ mountPoint: String, pattern: String, options: [String] = []) -> CommandResult {
        let result = dotsafe(["mount", storage, mountPoint, "--pattern-stdin"] + options, input: pattern + "\n")
        if result.status == 0 { mounted.insert(mountPoint) }
        return result
    }

    @discardableResult
    func lock(_ mountPoint: String) -> CommandResult {
        let result = dotsafe(["lock", mountPoint])
        if result.status == 0 { mounted.remove(mountPoint) }
        return result
    }

    /// Runs a bash script in `folder`; fails the test with its output when it fails.
    @discardableResult
    func sh(_ script: String, in folder: String? = nil, expectFailure: Bool = false,
            sourceLocation: SourceLocation = #_sourceLocation) -> CommandResult {
        let result = run("/bin/bash", ["-euo", "pipefail", "-c", script], input: nil, folder: folder ?? base)
        if !expectFailure {
            #expect(result.status == 0, "script failed: \(script)\n\(result)", sourceLocation: sourceLocation)
        }
        return result
    }

    static func isMounted(_ path: String) -> Bool {
        let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        return mounts.split(separator: "\n").contains { $0.split(separator: " ").dropFirst().first.map(String.init) == path }
    }

    /// The daemon serving a mount point: the process whose command line names it.
    static func daemonPID(for mountPoint: String) -> Int32? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry), pid != getpid(),
                  let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
            let words = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if words.contains("mount") && words.contains(mountPoint) && words.first?.hasSuffix("dotsafe") == true { return pid }
        }
        return nil
    }

    /// Names, sizes, contents and modification times of every storage file.
    func storageSnapshot() throws -> [String: String] {
        var snapshot: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: storage) {
            let path = storage + "/" + name
            var info = stat()
            lstat(path, &info)
            let data = FileManager.default.contents(atPath: path) ?? Data()
            snapshot[name] = "\(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec) \(data.hashValue)"
        }
        return snapshot
    }

    /// Unmounts anything still mounted and removes the folder.
    func finish() {
        for point in mounted where Self.isMounted(point) {
            _ = dotsafe(["lock", point])
            if Self.isMounted(point) { _ = run("/bin/fusermount3", ["-u", "-z", point], input: nil) }
        }
        mounted = []
        _ = run("/bin/rm", ["-rf", "--one-file-system", base], input: nil)
    }

    func run(_ executable: String, _ arguments: [String], input: String?, folder: String? = nil) -> CommandResult {
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
        nonisolated(unsafe) var out = Data(), err = Data()
        group.enter()
        DispatchQueue.global().async { out = output.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        err = error.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return CommandResult(status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
                             error: String(decoding: err, as: UTF8.self))
    }
}

struct CommandResult: CustomStringConvertible {
    var status: Int32
    var output: String
    var error: String
    var description: String { "status \(status)\n--- stdout\n\(output)\n--- stderr\n\(error)" }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
