import Foundation
import SystemCalls

/// The one place that runs the `rclone` program (R-SYN-2: DotSafe speaks no cloud protocol).
///
/// Isolation: a remote given on the fly or as a local folder is used with no config file at
/// all (`--config ""`), so nothing of the user's rclone config is read; a remote that names a
/// config section is looked up where rclone looks (`$RCLONE_CONFIG`, else rclone's default
/// file), unless `configFile` names one. rclone settings in the environment (`RCLONE_DRY_RUN`,
/// `RCLONE_MAX_TRANSFER`, ...) would change what a sync does, so every `RCLONE_*` variable is
/// dropped except `RCLONE_CONFIG`, `RCLONE_CONFIG_*` (remotes defined in the environment, the
/// config password) and `RCLONE_PASSWORD_COMMAND`. rclone runs under umask 077, so that what it
/// creates in a local folder is as private as the storage's own files. `TCELL_MINIMIZE=1` keeps
/// rclone's terminal library (for `rclone ncdu`, never used here) from building a table of every
/// character's width at each start: that table was half of a short command's CPU (rclone 1.60),
/// and a sync runs several commands.
public struct Rclone: Sendable {
    public struct Settings: Sendable {
        /// Files moved at once by one batch.
        public var transfers = 8
        public var connectTimeoutSeconds = 10
        /// A transfer that moves no byte for this long fails.
        public var idleTimeoutSeconds = 60
        /// Retries of one request inside rclone; a failed operation is never repeated whole
        /// (the sync decides what to do next).
        public var lowLevelRetries = 3
        /// A command that completes no file for this long has its remote probed, and is ended
        /// when the remote cannot be reached. rclone itself says so only once a file has used
        /// up its retries, which its shared pacer spaces up to 2 s apart across all transfers:
        /// 99 s into a batch of 48 files whose WebDAV server died (rclone 1.60).
        public var probeAfterQuietSeconds = 10
        /// How long the probe's one request may take: a server that takes connections and never
        /// answers (stopped, overloaded) is unreachable after this, not after rclone's three
        /// one-minute timeouts.
        public var probeTimeoutSeconds = 10
        /// More rclone flags (tests slow transfers down with `--bwlimit`).
        public var extraArguments: [String] = []
        public init() {}
    }

    /// The rclone program found on PATH.
    public let executable: String
    public let configFile: String?
    public let settings: Settings
    private let environment: [String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment, configFile: String? = nil,
                settings: Settings = Settings()) throws(RemoteError) {
        guard let found = Self.locate(path: environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin") else {
            throw .rcloneMissing
        }
        executable = found
        self.configFile = configFile
        self.settings = settings
        var passed = environment.filter { Self.passes($0.key) }
        passed["TCELL_MINIMIZE"] = "1"
        self.environment = passed.map { "\($0.key)=\($0.value)" }.sorted()
    }

    static func passes(_ variable: String) -> Bool {
        !variable.hasPrefix("RCLONE_") || variable == "RCLONE_CONFIG" || variable.hasPrefix("RCLONE_CONFIG_")
            || variable == "RCLONE_PASSWORD_COMMAND"
    }

    private static func locate(path: String) -> String? {
        for folder in path.split(separator: ":", omittingEmptySubsequences: false) {
            let candidate = (folder.isEmpty ? "." : String(folder)) + "/rclone"
            if let status = try? SystemCall.status(candidate), status.isRegular || status.isSymbolicLink,
               access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        return nil
    }

    /// Runs one rclone command about `remote`; the result whatever its exit status. With
    /// `stopAtFirstError`, rclone is ended at its first error line: a batch whose server went
    /// away would otherwise try every remaining file in turn (seconds each), and one failed
    /// file fails the batch anyway. With `filesDone`, a copy tells it how many files it has
    /// moved so far, after each one.
    func run(_ arguments: [String], on remote: RemoteLocation, input: [UInt8] = [], stopAtFirstError: Bool = false,
             filesDone: ((Int) -> Void)? = nil, whenQuiet: (() -> Bool)? = nil) throws(RemoteError) -> ChildProcess.Result {
        let config: [String]
        if let configFile { config = ["--config", configFile] } else if case .named = remote.kind { config = [] } else { config = ["--config", ""] }
        // At level INFO rclone says "INFO  : NAME: Copied (new)" for each file; its statistics
        // stay below that level (one line each if they ever showed).
        let level = filesDone == nil ? ["--log-level", "ERROR"] : ["--log-level", "INFO", "--stats-log-level", "DEBUG", "--stats-one-line"]
        let common = ["--ask-password=false", "--retries", "1",
                      "--low-level-retries", String(settings.lowLevelRetries),
                      "--contimeout", "\(settings.connectTimeoutSeconds)s", "--timeout", "\(settings.idleTimeoutSeconds)s"]
        var done = 0
        let taking = filesDone.map { report in
            { (line: String) -> Bool in
                guard Self.isReport(line) else { return false }
                if line.contains(": Copied (") {
                    done += 1
                    report(done)
                }
                return true
            }
        }
        // The next safe point of a sync asked to stop (or of a mount's round its lock gave up
        // on): no transfer starts, and one the stop ended is that, not a failure of the remote
        // (nor a reason to probe it). One that finished stays done.
        if let signal = Self.stopSignal { throw .interrupted(signal: signal) }
        let result: ChildProcess.Result
        do {
            result = try ChildProcess.run(executable, Array(arguments.prefix(1)) + config + level + common + settings.extraArguments
                                              + arguments.dropFirst(), environment: environment, privateFiles: true, input: input,
                                          stopOnErrorOutput: stopAtFirstError, takingErrorLines: taking,
                                          whenQuiet: whenQuiet.map { (settings.probeAfterQuietSeconds, $0) })
        } catch {
            throw .failed(remote: remote.description, status: -1, detail: "cannot run \(executable): \(error)")
        }
        if result.status != 0 || !result.errorOutput.isEmpty, let signal = Self.stopSignal { throw .interrupted(signal: signal) }
        return result
    }

    private static var stopSignal: Int32? { StopSignals.caught ?? RunningChildren.stopSignal }

    /// A line rclone logs below level ERROR (INFO and NOTICE: level ERROR never shows them), as
    /// `2026/12/02 03:00:00 INFO  : NAME: Copied (new)`.
    static func isReport(_ line: String) -> Bool {
        line.contains(" INFO  : ") || line.contains(" NOTICE: ")
    }

    /// Runs a command that must succeed (ended at its first error, or when it has gone quiet
    /// and its remote cannot be reached); its standard output.
    @discardableResult
    func check(_ arguments: [String], on remote: RemoteLocation, input: [UInt8] = [], writing: Bool,
               filesDone: ((Int) -> Void)? = nil) throws(RemoteError) -> [UInt8] {
        let result = try watched(arguments, on: remote, input: input, stopAtFirstError: true, filesDone: filesDone)
        guard result.status == 0 && result.errorOutput.isEmpty else {
            let error = RemoteError.classify(status: result.status, errorOutput: result.errorOutput, remote: remote, writing: writing)
            throw probed(error, remote)
        }
        return result.output
    }

    /// Runs a command, ended when it has gone quiet and its remote cannot be reached (that is
    /// the error then); the caller reads its status. A server that takes connections and never
    /// answers (stopped, overloaded) held a listing for rclone's three one-minute timeouts.
    func watched(_ arguments: [String], on remote: RemoteLocation, input: [UInt8] = [], stopAtFirstError: Bool = false,
                 filesDone: ((Int) -> Void)? = nil) throws(RemoteError) -> ChildProcess.Result {
        var lost: RemoteError?
        let result = try run(arguments, on: remote, input: input, stopAtFirstError: stopAtFirstError, filesDone: filesDone) {
            lost = unreachable(remote)
            return lost == nil
        }
        if let lost { throw lost }
        return result
    }

    /// A lost server shows first as whatever the transfer was doing (SFTP: "corrupted on
    /// transfer: md5 hash differ", the hash command having died with the connection). An
    /// unexplained failure is therefore followed by a probe: if the remote cannot be reached,
    /// that is the error.
    private func probed(_ error: RemoteError, _ remote: RemoteLocation) -> RemoteError {
        guard case .failed = error else { return error }
        return unreachable(remote) ?? error
    }

    /// Why the remote cannot be reached now, from one cheap request (the storage folder's own
    /// entry, not its listing; a folder not made yet was reached), or nil when it answers
    /// within `probeTimeoutSeconds`, at its one try.
    private func unreachable(_ remote: RemoteLocation) -> RemoteError? {
        let quick = ["--timeout", "\(settings.probeTimeoutSeconds)s", "--low-level-retries", "1"]
        guard let probe = try? run(["lsjson", "--stat", "--no-modtime", "--no-mimetype"] + quick + [remote.path], on: remote),
              probe.status != 0 && probe.status != 3 else { return nil }
        let error = RemoteError.classify(status: probe.status, errorOutput: probe.errorOutput, remote: remote, writing: false)
        if case .unreachable = error { return error }
        return nil
    }
}
