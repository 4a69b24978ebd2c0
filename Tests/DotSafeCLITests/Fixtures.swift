import DotSafeCLI

/// A command with every kind of option and argument, shaped like the coming `mount`, that
/// prints what it parsed. It exercises the parser through the public `Command` protocol.
struct ProbeCommand: Command {
    static let name = "probe"
    static let summary = "Print what was parsed (a test fixture)."
    static let usesKeyring = true
    static let discussion = "Example:\n  dotsafe probe --pattern b2-c2-d3-d4 -o ro STORAGE"
    static let pattern = OptionSpec.value("pattern", placeholder: "PATTERN", help: "The unlock pattern.")
    static let force = OptionSpec.flag("force", short: "f", help: "Go ahead.")
    static let verbose = OptionSpec.flag(nil, short: "v", help: "Say more.")
    static let mountOption = OptionSpec.value(nil, short: "o", placeholder: "OPTION", repeatable: true,
                                              help: "A mount option; may be repeated.")
    static let storage = PositionalSpec("STORAGE", help: "The storage folder.")
    static let mountPoint = PositionalSpec("MOUNTPOINT", arity: .optional, help: "Where to mount it.")
    static let signature = CommandSignature(options: [pattern, force, verbose, mountOption],
                                            positionals: [storage, mountPoint])

    let storage: String
    let mountPoint: String?
    let pattern: String?
    let force: Bool
    let verbose: Bool
    let mountOptions: [String]

    init(parsing arguments: ParsedArguments) throws {
        storage = try arguments.required(Self.storage)
        mountPoint = arguments.positional(Self.mountPoint)
        pattern = arguments.value(Self.pattern)
        force = arguments.flag(Self.force)
        verbose = arguments.flag(Self.verbose)
        mountOptions = arguments.values(Self.mountOption)
        if pattern == "invalid" {
            throw CLIError.usage("'invalid' is not a pattern")
        }
        if pattern == "other-error" {
            throw FixtureError.somethingElse
        }
    }

    func run(context: CommandContext) throws -> Int32 {
        context.standardOutput.writeLine("""
            storage=\(storage) mountpoint=\(mountPoint ?? "-") pattern=\(pattern ?? "-") \
            force=\(force) verbose=\(verbose) o=\(mountOptions) \
            keyring=\(context.globalOptions.keyringPath ?? "-")
            """)
        return 0
    }
}

/// A command with a variadic argument that fails or succeeds as told.
struct FilesCommand: Command {
    static let name = "files"
    static let summary = "Fail or succeed as told (a test fixture)."
    static let files = PositionalSpec("FILE", arity: .variadic, help: "Files to name.")
    static let signature = CommandSignature(positionals: [files])

    let files: [String]

    init(parsing arguments: ParsedArguments) throws {
        files = arguments.positionals(Self.files)
    }

    func run(context: CommandContext) throws -> Int32 {
        switch files.first {
        case "fail": throw CLIError.failure("it failed")
        case "usage": throw CLIError.usage("bad usage found late")
        case "other": throw FixtureError.somethingElse
        case "status": return 3
        default:
            context.standardOutput.writeLine(files.joined(separator: ","))
            context.standardError.writeLine("note")
            return 0
        }
    }
}

enum FixtureError: Error, CustomStringConvertible {
    case somethingElse
    var description: String { "something else went wrong" }
}

/// The real commands plus the fixtures.
let fixtureCommands: [any Command.Type] = DotSafeCLI.commands + [ProbeCommand.self, FilesCommand.self]

/// Runs `dotsafe ARGUMENTS` with the fixture commands registered.
func runFixture(_ arguments: [String], environment: [String: String] = [:]) -> CLIRun {
    CLIRun(arguments, environment: environment, commands: fixtureCommands)
}

/// The line `ProbeCommand` prints.
func probeLine(storage: String, mountPoint: String = "-", pattern: String = "-", force: Bool = false,
               verbose: Bool = false, o: [String] = [], keyring: String = "-") -> String {
    "storage=\(storage) mountpoint=\(mountPoint) pattern=\(pattern) force=\(force) verbose=\(verbose) "
        + "o=\(o) keyring=\(keyring)\n"
}
