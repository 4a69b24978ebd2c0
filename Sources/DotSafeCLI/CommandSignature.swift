/// An option a command accepts: a flag (`-f`, `--force`) or an option with a value
/// (`--pattern P`, `--pattern=P`, `-o VALUE`, `-oVALUE`).
public struct OptionSpec: Hashable, Sendable {
    /// Whether the option takes a value.
    public enum Kind: Hashable, Sendable {
        /// A flag: present or not.
        case flag
        /// An option that takes one value; `placeholder` names it in help (`PATH`).
        case value(placeholder: String)
    }

    /// The long name without dashes (`pattern` for `--pattern`), if any.
    public let long: String?
    /// The short name without the dash (`o` for `-o`), if any.
    public let short: Character?
    public let kind: Kind
    /// Whether the option may be given more than once (each value is kept, in order).
    /// Without it, a second occurrence is a usage error.
    public let isRepeatable: Bool
    /// One sentence for the help text.
    public let help: String

    /// A flag such as `--force` / `-f`.
    public static func flag(_ long: String?, short: Character? = nil, help: String) -> OptionSpec {
        OptionSpec(long: long, short: short, kind: .flag, isRepeatable: false, help: help)
    }

    /// An option with a value such as `--pattern PATTERN` or `-o OPTION`.
    public static func value(_ long: String?, short: Character? = nil, placeholder: String,
                             repeatable: Bool = false, help: String) -> OptionSpec {
        OptionSpec(long: long, short: short, kind: .value(placeholder: placeholder),
                   isRepeatable: repeatable, help: help)
    }

    private init(long: String?, short: Character?, kind: Kind, isRepeatable: Bool, help: String) {
        precondition(long != nil || short != nil, "an option needs a long or a short name")
        self.long = long
        self.short = short
        self.kind = kind
        self.isRepeatable = isRepeatable
        self.help = help
    }

    /// How messages name the option: `--pattern`, or `-o` if it has no long name.
    public var displayName: String {
        if let long { "--\(long)" } else { "-\(short!)" }
    }

    /// Whether the option takes a value.
    public var takesValue: Bool {
        if case .value = kind { true } else { false }
    }

    /// The value's placeholder, for options that take one.
    public var placeholder: String? {
        if case .value(let placeholder) = kind { placeholder } else { nil }
    }
}

/// A positional argument, named in capitals (`STORAGE`) in messages and help.
public struct PositionalSpec: Hashable, Sendable {
    /// How many values the argument takes. Optional and variadic arguments come last.
    public enum Arity: Hashable, Sendable {
        /// Exactly one value; missing it is `missing argument NAME`.
        case required
        /// Zero or one value.
        case optional
        /// Zero or more values: all remaining positional arguments.
        case variadic
    }

    public let name: String
    public let arity: Arity
    /// The words it takes, when it takes one of a few (`export`, `import`): offered by the
    /// shell completions. Empty for free values.
    public let values: [String]
    /// One sentence for the help text.
    public let help: String

    public init(_ name: String, arity: Arity = .required, values: [String] = [], help: String) {
        self.name = name
        self.arity = arity
        self.values = values
        self.help = help
    }
}

/// Everything a command accepts on its command line; drives both parsing and help.
public struct CommandSignature: Sendable {
    public var options: [OptionSpec]
    public var positionals: [PositionalSpec]

    public init(options: [OptionSpec] = [], positionals: [PositionalSpec] = []) {
        for (index, positional) in positionals.enumerated() where positional.arity != .required {
            precondition(positionals[(index + 1)...].allSatisfy { $0.arity == .optional }
                         && (positional.arity == .optional || index == positionals.count - 1),
                         "optional arguments must come after required ones, a variadic one last")
        }
        self.options = options
        self.positionals = positionals
    }

    /// This signature with `options` added (the global options and `--help`).
    func adding(_ extraOptions: [OptionSpec]) -> CommandSignature {
        CommandSignature(options: options + extraOptions, positionals: positionals)
    }
}
