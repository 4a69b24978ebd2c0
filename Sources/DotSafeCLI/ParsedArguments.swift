/// The result of parsing a command line against a `CommandSignature`: which options were
/// given, with their values, and the positional arguments. A command's `init(parsing:)` reads
/// it through the same `OptionSpec` / `PositionalSpec` values its signature lists.
public struct ParsedArguments: Sendable {
    /// Values per option, in command-line order; a flag has one empty string per occurrence.
    private var optionValues: [OptionSpec: [String]] = [:]
    /// Values per positional argument.
    private var positionalValues: [String: [String]] = [:]

    public init() {}

    /// Whether the flag (or option) was given.
    public func flag(_ option: OptionSpec) -> Bool {
        optionValues[option] != nil
    }

    /// The option's value, or `nil` if it was not given.
    public func value(_ option: OptionSpec) -> String? {
        optionValues[option]?.last
    }

    /// All values of a repeatable option, in command-line order.
    public func values(_ option: OptionSpec) -> [String] {
        optionValues[option] ?? []
    }

    /// The positional argument's value, or `nil` if it was not given.
    public func positional(_ positional: PositionalSpec) -> String? {
        positionalValues[positional.name]?.first
    }

    /// A required positional argument. The parser already refused a command line without it;
    /// this throws `missing argument NAME` all the same rather than trap.
    public func required(_ positional: PositionalSpec) throws(CLIError) -> String {
        guard let value = self.positional(positional) else {
            throw .usage("missing argument \(positional.name)")
        }
        return value
    }

    /// All values of a variadic positional argument.
    public func positionals(_ positional: PositionalSpec) -> [String] {
        positionalValues[positional.name] ?? []
    }

    /// Number of times the option was given (flags count occurrences too).
    func occurrences(_ option: OptionSpec) -> Int {
        optionValues[option]?.count ?? 0
    }

    mutating func append(_ value: String, for option: OptionSpec) {
        optionValues[option, default: []].append(value)
    }

    mutating func append(_ value: String, for positional: PositionalSpec) {
        positionalValues[positional.name, default: []].append(value)
    }
}
