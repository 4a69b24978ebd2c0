import VaultStore

/// `dotsafe audit STORAGE`: what an observer of the storage folder sees in its metadata, with a
/// verdict per field (R-DEN-3). Needs no pattern; opens no file, reads no content, writes
/// nothing and leaves no access time behind (statx only).
struct AuditCommand: Command {
    static let name = "audit"
    static let summary = "Show what the storage's metadata tells an observer."
    static let discussion = """
        Lists what anyone holding a copy of STORAGE sees without a pattern: the number
        of files and its step, sizes, names, and for every time field, inode numbers and
        listing order their spread, a histogram and a verdict: 'hides' (nothing to see),
        'bursts' (files made or changed together: when the storage was used), 'creation
        order' (ranks files by age), 'reads' (files read since their last change). Then
        what this file system records that no program can set. Reads metadata only
        (statx): no file is opened, nothing is written, no access time changes.
        """
    static let storage = PositionalSpec("STORAGE", help: "The storage folder to look at.")
    static let json = OptionSpec.flag("json", help: "Print the report as one JSON object, for scripts.")
    static let signature = CommandSignature(options: [json], positionals: [storage])

    let storagePath: String
    let asJSON: Bool

    init(parsing arguments: ParsedArguments) throws {
        storagePath = try arguments.required(Self.storage)
        asJSON = arguments.flag(Self.json)
    }

    func run(context: CommandContext) throws -> Int32 {
        let progress = ProgressReporter("audit", unit: "files", to: context.standardError)
        let scan: StorageScan
        do {
            defer { progress.finish() }
            scan = try StorageScan.scan(storagePath) { progress.update(done: $0, total: $1) }
        }
        let audit = MetadataAudit(scan: scan)
        let report = AuditReport(storage: storagePath, audit: audit)
        context.standardOutput.write(asJSON ? try report.json() : report.text())
        return 0
    }
}
