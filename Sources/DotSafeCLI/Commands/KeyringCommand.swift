import Foundation
import VaultCore
import VaultStore

/// `dotsafe keyring export FILE` and `dotsafe keyring import FILE`: a passphrase-protected copy
/// of the keyring, so that a second machine or a backup derives the same keys (R-KEY-3).
struct KeyringCommand: Command {
    static let name = "keyring"
    static let summary = "Export the keyring under a passphrase, or import an export."
    static let usesKeyring = true
    static let discussion = """
        export FILE   writes the keyring to FILE, sealed with a passphrase typed twice.
        import FILE   adds the keyring items in FILE to this machine's keyring.
        The salt alone opens nothing, but with it a short pattern can be guessed
        offline: keep the export as safe as the storage; use a long passphrase.
        """
    static let action = PositionalSpec("ACTION", values: ["export", "import"], help: "export or import.")
    static let file = PositionalSpec("FILE", help: "The export file.")
    static let passphraseStdin = OptionSpec.flag("passphrase-stdin", help: "Read the passphrase as one line from standard input.")
    static let replace = OptionSpec.flag("replace", help: "On import, replace a different salt (vaults made with the old one will look empty).")
    static let signature = CommandSignature(options: [passphraseStdin, replace], positionals: [action, file])

    static let minimumPassphraseLength = 8

    enum Action: String { case export, `import` }

    let action: Action
    let file: String
    let passphraseFromStdin: Bool
    let replace: Bool

    init(parsing arguments: ParsedArguments) throws {
        let word = try arguments.required(Self.action)
        guard let action = Action(rawValue: word) else { throw CLIError.usage("unknown keyring action '\(word)': use export or import") }
        self.action = action
        file = try arguments.required(Self.file)
        passphraseFromStdin = arguments.flag(Self.passphraseStdin)
        replace = arguments.flag(Self.replace)
        if replace && action == .export { throw CLIError.usage("--replace goes with import") }
    }

    func run(context: CommandContext) throws -> Int32 {
        let keyring = Keyring(option: context.globalOptions.keyringPath, environment: context.environment)
        switch action {
        case .export:
            guard !PrivateFile.exists(file) else { throw CLIError.failure("\(file) exists: choose a new file name") }
            var passphrase = try readPassphrase(context, confirm: true)
            defer { passphrase.wipe() }
            try PrivateFile.writeAtomically(file, try keyring.export(passphrase: passphrase, rounds: KDFSettings.rounds(context.environment)))
            context.standardOutput.writeLine("Exported \(keyring.backend.location) to \(file).")
        case .import:
            guard let data = FileManager.default.contents(atPath: file) else { throw CLIError.failure("cannot read \(file)") }
            var passphrase = try readPassphrase(context, confirm: false)
            defer { passphrase.wipe() }
            let tags = try keyring.importExport(Array(data), passphrase: passphrase, replace: replace)
            context.standardOutput.writeLine(tags.isEmpty ? "The keyring \(keyring.backend.location) already holds everything in \(file)."
                                                          : "Imported \(tags.joined(separator: ", ")) into \(keyring.backend.location).")
        }
        return 0
    }

    private func readPassphrase(_ context: CommandContext, confirm: Bool) throws -> [UInt8] {
        let input = context.standardInput
        guard passphraseFromStdin || input.isTerminal else {
            throw CLIError.failure("no terminal to ask for the passphrase: use --passphrase-stdin")
        }
        let ask = passphraseFromStdin ? nil : "Passphrase: "
        guard var first = try input.readLine(prompt: ask, secret: true), !first.isEmpty else {
            throw CLIError.failure("no passphrase given")
        }
        guard first.count >= Self.minimumPassphraseLength || action == .import else {
            first.wipe()
            throw CLIError.failure("the passphrase is too short: use at least \(Self.minimumPassphraseLength) characters")
        }
        if confirm && !passphraseFromStdin {
            var second = try input.readLine(prompt: "Passphrase again: ", secret: true) ?? []
            defer { second.wipe() }
            guard second == first else {
                first.wipe()
                throw CLIError.failure("the two passphrases differ: nothing was written")
            }
        }
        return first
    }
}
