import Foundation
import Glibc

/// A remote for the sync tests, started by the test on 127.0.0.1 (a free port) and stopped by it
/// (`finish()`): `rclone serve webdav` or `rclone serve sftp` over a folder of the test, moto's
/// S3 server (from the venv that tools/install-deps makes) reached through an rclone config
/// file in the test's folder, or a plain local folder. No mock of rclone anywhere.
public final class TestRemote: @unchecked Sendable {
    public enum Kind: String, CaseIterable, Sendable, CustomStringConvertible {
        case local, webdav, sftp, s3
        public var description: String { rawValue }
    }

    public let kind: Kind
    /// The test's own folder: server logs, the served folder, the S3 config.
    public let folder: String
    /// What rclone is given: an on-the-fly remote, a config section, or a folder.
    public let path: String
    /// The rclone config made for the S3 remote (nil: none needed).
    public let configFile: String?
    /// Where the remote's files lie on this machine (nil for S3, which keeps them in memory).
    public let servedFolder: String?
    public let readOnly: Bool
    private let port: Int
    private var server: Process?

    /// The environment for rclone here: this machine sets AWS_CA_BUNDLE, which rclone 1.60's S3
    /// client cannot load ("unsupported transport"); and the servers start without the width
    /// table DotSafe's own rclone runs skip too (`Rclone`'s TCELL_MINIMIZE).
    public static var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["AWS_CA_BUNDLE"] = nil
        environment["TCELL_MINIMIZE"] = "1"
        return environment
    }

    /// moto's server: `DOTSAFE_MOTO_SERVER`, else the venv tools/install-deps makes in the repository.
    public static var motoServer: String {
        if let path = ProcessInfo.processInfo.environment["DOTSAFE_MOTO_SERVER"], !path.isEmpty { return path }
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return repository.appendingPathComponent(".venv-test/bin/moto_server").path
    }

    public init(_ kind: Kind, readOnly: Bool = false) throws {
        self.kind = kind
        self.readOnly = readOnly
        folder = try TestFolder.make("remote-\(kind)")
        port = kind == .local ? 0 : try LoopbackPort.free()
        let served = folder + "/served"
        switch kind {
        case .local:
            path = folder + "/remote-storage"; configFile = nil; servedFolder = path
        case .webdav:
            path = ":webdav,url='http://127.0.0.1:\(port)':storage"; configFile = nil; servedFolder = served + "/storage"
        case .sftp:
            // The server takes no password; the client must offer one, obscured as rclone wants.
            let obscured = try run(["rclone", "obscure", "dotsafe"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
            path = ":sftp,host=127.0.0.1,port=\(port),user=dotsafe,pass=\(obscured):storage"; configFile = nil
            servedFolder = served + "/storage"
        case .s3:
            configFile = folder + "/rclone.conf"
            path = "dotsafe-s3:dotsafe-bucket/storage"; servedFolder = nil
            try """
                [dotsafe-s3]
                type = s3
                provider = Other
                access_key_id = dotsafe
                secret_access_key = dotsafe-test
                endpoint = http://127.0.0.1:\(port)
                region = us-east-1

                """.write(toFile: configFile!, atomically: false, encoding: .utf8)
        }
        try FileManager.default.createDirectory(atPath: served, withIntermediateDirectories: true)
        do { try start() } catch { finish(); throw error }
    }

    /// Starts the server (again, on the same port) and waits until it accepts connections.
    public func start() throws {
        guard kind != .local, server == nil else { return }
        let process = Process()
        let served = folder + "/served"
        let readOnlyFlag = readOnly ? ["--read-only"] : []
        switch kind {
        case .local: return
        case .webdav:
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["rclone", "serve", "webdav", "--config", "", "--addr", "127.0.0.1:\(port)"] + readOnlyFlag + [served]
        case .sftp:
            // Host keys go into the test's folder, not ~/.cache.
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["rclone", "serve", "sftp", "--config", "", "--no-auth", "--cache-dir", folder + "/cache",
                                 "--addr", "127.0.0.1:\(port)"] + readOnlyFlag + [served]
        case .s3:
            process.executableURL = URL(fileURLWithPath: Self.motoServer)
            process.arguments = ["-H", "127.0.0.1", "-p", String(port)]
        }
        process.environment = Self.environment
        let log = folder + "/server.log"
        if !FileManager.default.fileExists(atPath: log) { FileManager.default.createFile(atPath: log, contents: nil) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        handle.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        server = process
        guard waitFor(seconds: 30, { LoopbackPort.isListening(port) || !process.isRunning }), process.isRunning else {
            stop()
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw HarnessError("the \(kind) server did not start on port \(port): \(said.suffix(400))")
        }
    }

    /// Stops the server at once (SIGKILL: as a crash or a lost network would) and waits for it.
    public func stop() {
        guard let server else { return }
        if server.isRunning { kill(server.processIdentifier, SIGKILL) }
        server.waitUntilExit()
        self.server = nil
    }

    /// Freezes the server (SIGSTOP): the kernel still takes its connections, and nothing
    /// answers them, as with a hung or overloaded server. `stop` still ends it.
    public func freeze() {
        guard let server, server.isRunning else { return }
        kill(server.processIdentifier, SIGSTOP)
    }

    /// Stops the server and removes the test's folder.
    public func finish() {
        stop()
        TestFolder.remove(folder)
    }

    /// Puts a file of any name and content on the remote with plain rclone (a stranger's file,
    /// a damaged one), beside the storage.
    public func plant(_ name: String, _ bytes: [UInt8]) throws {
        let source = folder + "/plant-source"
        try Data(bytes).write(to: URL(fileURLWithPath: source))
        defer { try? FileManager.default.removeItem(atPath: source) }
        let target = path.hasSuffix("/") ? path + name : path + "/" + name
        let config = configFile.map { ["--config", $0] } ?? ["--config", ""]
        let result = CommandResult.run("/usr/bin/env", ["rclone"] + config + ["copyto", source, target], environment: Self.environment)
        guard result.succeeded else { throw HarnessError("rclone copyto \(name): \(result)") }
    }

    /// Every file name on the remote, of any form (with plain rclone).
    public func allNames() throws -> [String] {
        let config = configFile.map { ["--config", $0] } ?? ["--config", ""]
        let result = CommandResult.run("/usr/bin/env", ["rclone"] + config + ["lsf", "--files-only", path], environment: Self.environment)
        guard result.succeeded else { throw HarnessError("rclone lsf: \(result)") }
        return result.output.split(separator: "\n").map(String.init).sorted()
    }
}
