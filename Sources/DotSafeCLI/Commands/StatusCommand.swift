import Foundation

/// `dotsafe status [--json]`: this user's open vaults, from the records in the private runtime
/// folder and what each daemon says of its mount. Storage paths are shown to their owner only:
/// the records are in a folder no one else can read.
struct StatusCommand: Command {
    static let name = "status"
    static let summary = "List your open vaults: mount point, storage, since when."
    static let json = OptionSpec.flag("json", help: "Print a JSON array with one object per open vault.")
    static let signature = CommandSignature(options: [json])

    /// One open vault, as `--json` prints it.
    struct Entry: Encodable, Equatable {
        var mountpoint: String
        var storage: String
        /// When the mount became ready, ISO 8601 in UTC.
        var since: String
        /// Changes not yet written to the storage; nil when the daemon did not answer, or a
        /// commit under way held the vault (`MountState.pending`).
        var pending: Bool?
        /// Seconds until the idle timer locks the vault; nil without `--idle`.
        var idle: Double?
        /// `mount --sync`: "syncing since TIME" while a round runs ("last sync failed at TIME:
        /// WHY; retrying" when the one before failed), else "synced at TIME", "failed at TIME:
        /// WHY", "not yet synced"; "off" without it; nil when the daemon did not answer.
        var sync: String?

        enum CodingKeys: String, CodingKey { case mountpoint, storage, since, pending, idle, sync }

        func encode(to encoder: any Encoder) throws {
            // Every key, null included, so that scripts can rely on them.
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(mountpoint, forKey: .mountpoint)
            try container.encode(storage, forKey: .storage)
            try container.encode(since, forKey: .since)
            try container.encode(pending, forKey: .pending)
            try container.encode(idle, forKey: .idle)
            try container.encode(sync, forKey: .sync)
        }
    }

    let asJSON: Bool

    init(parsing arguments: ParsedArguments) throws {
        asJSON = arguments.flag(Self.json)
    }

    func run(context: CommandContext) throws -> Int32 {
        let folder = RuntimeFolder.existing(environment: context.environment)
        let records = (folder.map { MountRecord.all(in: $0) } ?? []).sorted { $0.started < $1.started }
        let answers = records.compactMap { record in folder.flatMap { Self.entry(record, folder: $0) } }
        let entries = answers.map(\.entry)
        for problem in answers.compactMap(\.problem) { context.standardError.writeLine("\(DotSafeCLI.name): \(problem.message)") }
        if asJSON {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            context.standardOutput.writeLine(String(decoding: try encoder.encode(entries), as: UTF8.self))
        } else if entries.isEmpty {
            context.standardOutput.writeLine("No vault is open.")
        } else {
            context.standardOutput.write(Self.table(entries))
        }
        return 0
    }

    /// The record with its daemon's answer; nil when no daemon listens (it was killed). A daemon
    /// that does not answer in `MountRecord.answerSeconds` (stopped, hung) is listed without
    /// its state, and `problem` says so.
    static func entry(_ record: MountRecord, folder: RuntimeFolder) -> (entry: Entry, problem: CLIError?)? {
        let since = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: record.started))
        var entry = Entry(mountpoint: record.mountPoint, storage: record.storage, since: since)
        do {
            guard let state = try record.state(in: folder) else { return nil }
            (entry.pending, entry.idle, entry.sync) = (state.pending, state.idleLockIn, state.sync)
            return (entry, nil)
        } catch {
            return (entry, error as? CLIError ?? .failure("\(error)"))
        }
    }

    static func table(_ entries: [Entry]) -> String {
        let local = DateFormatter()
        local.dateFormat = "yyyy-MM-dd HH:mm:ss"
        let iso = ISO8601DateFormatter()
        let header = ["MOUNT POINT", "STORAGE", "SINCE", "PENDING", "SYNC", "IDLE LOCK"]
        let rows = entries.map { entry in
            [entry.mountpoint, entry.storage, iso.date(from: entry.since).map(local.string) ?? entry.since,
             entry.pending.map { $0 ? "yes" : "no" } ?? "?", entry.sync.map(syncColumn) ?? "?", entry.idle.map(duration) ?? "-"]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max()! }
        return ([header] + rows).map { row in
            row.enumerated().map { column, text in
                column == row.count - 1 ? text : text + String(repeating: " ", count: widths[column] - text.count)
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }

    /// The sync state without the failure's reason (`--json` has it): `off`, `syncing 14:02:09`,
    /// `synced 14:02:11`, `failed 14:03:40`, `failed 14:03:40, retrying`, `not yet`.
    static func syncColumn(_ text: String) -> String {
        let local = DateFormatter()
        local.dateFormat = "HH:mm:ss"
        let states = [("syncing since ", "syncing", ""), ("synced at ", "synced", ""), ("failed at ", "failed", ""),
                      ("last sync failed at ", "failed", ", retrying")]
        for (prefix, word, after) in states where text.hasPrefix(prefix) {
            let time = text.dropFirst(prefix.count).prefix(20)
            return word + " " + (ISO8601DateFormatter().date(from: String(time)).map(local.string) ?? "") + after
        }
        return text == "not yet synced" ? "not yet" : text
    }

    /// `in 4m 10s`, `in 1h 2m`, `in 12s`. Any number may come from a daemon (one started by an
    /// older DotSafe took any `--idle`): held to 0...1e12 before it becomes an Int, which would trap.
    static func duration(_ seconds: Double) -> String {
        guard !seconds.isNaN else { return "?" }
        let total = Int(min(max(seconds, 0), 1e12).rounded(.up))
        let (hours, minutes, rest) = (total / 3600, total % 3600 / 60, total % 60)
        if hours > 0 { return "in \(hours)h \(minutes)m" }
        return minutes > 0 ? "in \(minutes)m \(rest)s" : "in \(rest)s"
    }
}
