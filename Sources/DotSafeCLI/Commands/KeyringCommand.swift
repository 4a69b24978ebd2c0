import Foundation
import VaultCore
import VaultStore

/// `dotsafe keyring [show | export | import | move]`: where the keyring lives, a copy of it
/// under a passphrase or on paper, and moving it between a file and the Secret Service
/// (R-KEY-3, R-KEY-4, R-KEY-6).
struct KeyringCommand: Command {
    static let name = "keyring"
    static let summary = "Show, back up, restore or move the keyring."
    static let usesKeyring = true
    static let discussion = """
        show (or nothing)     says where the keyring lives, and its KDF.
        export FILE           writes it to FILE, sealed with a passphrase typed twice.
        export --text         prints a recovery code to write on paper.
        import FILE           adds the items of an export to this keyring.
        import --text [FILE]  reads a recovery code from FILE or standard input.
        move secret-service   moves the keyring into the desktop's Secret Service.
        move PATH             moves it to the file PATH.
        The salt alone opens nothing, but with it a short pattern can be guessed
        offline: keep exports and the paper as safe as the storage.
        """
    static let action = PositionalSpec("ACTION", arity: .optional, values: ["show", "export", "import", "move"],
                                       help: "show, export, import or move.")
    static let target = PositionalSpec("FILE", arity: .optional, help: "The export file, or where to move the keyring.")
    static let passphraseStdin = OptionSpec.flag("passphrase-stdin", help: "Read the passphrase as one line from standard input.")
    static let replace = OptionSpec.flag("replace", help: "On import, replace a different salt (vaults made with the old one will look empty).")
    static let text = OptionSpec.flag("text", help: "Export or import a recovery code for paper instead of a file.")
    static let signature = CommandSignature(options: [passphraseStdin, replace, text], positionals: [action, target])

    static let minimumPassphraseLength = 8

    enum Action: String { case show, export, `import`, move }

    let action: Action
    let target: String?
    let passphraseFromStdin: Bool
    let replace: Bool
    let asText: Bool

    init(parsing arguments: ParsedArguments) throws {
        let word = arguments.positional(Self.action) ?? "show"
        guard let action = Action(rawValue: word) else {
            throw CLIError.usage("unknown keyring action '\(word)': use show, export, import or move")
        }
        self.action = action
        target = arguments.positional(Self.target)
        passphraseFromStdin = arguments.flag(Self.passphraseStdin)
        replace = arguments.flag(Self.replace)
        asText = arguments.flag(Self.text)
        if replace && action != .import { throw CLIError.usage("--replace goes with import") }
        if asText && action != .export && action != .import { throw CLIError.usage("--text goes with export or import") }
        if asText && passphraseFromStdin { throw CLIError.usage("a recovery code has no passphrase: --text and --passphrase-stdin exclude each other") }
        switch action {
        case .show:
            if target != nil { throw CLIError.usage("keyring show takes no file") }
        case .export where asText:
            if target != nil { throw CLIError.usage("export --text prints the code: redirect it if you want a file") }
        case .export, .import:
            if target == nil && !asText { throw CLIError.usage("missing argument FILE") }
        case .move:
            if target == nil { throw CLIError.usage("missing argument: move secret-service, or move PATH") }
        }
    }

    func run(context: CommandContext) throws -> Int32 {
        let keyring = try Keyring(option: context.globalOptions.keyringPath, environment: context.environment)
        let out = context.standardOutput
        switch (action, asText) {
        case (.show, _):
            try show(keyring, context)
        case (.export, true):
            try RecoveryCodeText.print(keyring, context)
        case (.export, false):
            let file = target!
            guard !PrivateFile.exists(file) else { throw CLIError.failure("\(file) exists: choose a new file name") }
            var passphrase = try readPassphrase(context, confirm: true)
            defer { passphrase.wipe() }
            try PrivateFile.writeAtomically(file, try keyring.export(passphrase: passphrase, rounds: KDFSettings.rounds(context.environment)))
            out.writeLine("Exported \(keyring.backend.location) to \(file).")
        case (.import, true):
            let code = try RecoveryCodeText.read(from: target, context)
            let changed = try keyring.importRecoveryCode(code, replace: replace)
            out.writeLine(changed ? "Imported the pattern salt into \(keyring.backend.location)."
                                  : "The keyring \(keyring.backend.location) already holds this salt.")
        case (.import, false):
            let file = target!
            guard let data = FileManager.default.contents(atPath: file) else { throw CLIError.failure("cannot read \(file)") }
            var passphrase = try readPassphrase(context, confirm: false)
            defer { passphrase.wipe() }
            let tags = try keyring.importExport(Array(data), passphrase: passphrase, replace: replace)
            out.writeLine(tags.isEmpty ? "The keyring \(keyring.backend.location) already holds everything in \(file)."
                                       : "Imported \(tags.joined(separator: ", ")) into \(keyring.backend.location).")
        case (.move, _):
            try move(keyring, context)
        }
        return 0
    }

    private func show(_ keyring: Keyring, _ context: CommandContext) throws {
        guard let salt = try keyring.patternSalt() else { throw KeyringError.missing(keyring.backend.place) }
        let out = context.standardOutput
        if keyring.backend is SecretServiceKeyringBackend {
            out.writeLine("The keyring is in \(keyring.backend.location).")
        } else {
            out.writeLine("The keyring is the file \(keyring.backend.location).")
        }
        out.writeLine("Pattern salt: \(salt.kdf).")
    }

    private func move(_ keyring: Keyring, _ context: CommandContext) throws {
        let place = target!
        let location = KeyringLocation(option: context.globalOptions.keyringPath, environment: context.environment)
        let destination: any KeyringBackend
        if place == KeyringLocation.secretServiceName {
            guard !(keyring.backend is SecretServiceKeyringBackend) else {
                throw CLIError.failure("the keyring is in the Secret Service already: nothing was changed")
            }
            destination = SecretServiceKeyringBackend(recordPath: location.path, environment: context.environment)
        } else {
            let path = place.hasPrefix("/") ? place : FileManager.default.currentDirectoryPath + "/" + place
            if let file = keyring.backend as? FileKeyringBackend, file.path == path || file.path == place {
                throw CLIError.failure("the keyring is \(place) already: nothing was changed")
            }
            destination = FileKeyringBackend(path: path)
        }
        try KeyringMove.move(from: keyring.backend, to: destination)
        context.standardOutput.writeLine("Moved the keyring to \(destination.location).")
        if let file = destination as? FileKeyringBackend,
           KeyringLocation(option: nil, environment: context.environment).path != file.path {
            context.standardOutput.writeLine("Commands find it with --keyring \(file.path) or DOTSAFE_KEYRING=\(file.path).")
        }
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
