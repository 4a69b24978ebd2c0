/// Parses command-line tokens against a `CommandSignature`.
///
/// Accepted forms: `--name VALUE`, `--name=VALUE`, `--flag`, `-f`, `-o VALUE`, `-oVALUE`,
/// bundled short flags (`-fv`, `-fo VALUE`), repeated options (if the option allows it), and
/// `--`, after which every token is positional. A lone `-` is positional (it often means
/// standard input). A value given as a separate token must not start with `-`, so that
/// `--pattern --force` reports the missing value instead of swallowing the next option;
/// `--pattern=-x` passes such a value. A negative number (`--idle -5s`) is taken as the value,
/// no option being a digit, so that the option can say what is wrong with it. An empty value
/// counts as missing.
enum CommandLineParser {
    /// Parses all of `tokens` (the arguments after the command name).
    static func parse(_ tokens: [String], signature: CommandSignature) throws(CLIError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var positionals: [String] = []
        var index = tokens.startIndex
        var optionsEnded = false
        while index < tokens.endIndex {
            let token = tokens[index]
            index += 1
            if optionsEnded || !isOption(token) {
                positionals.append(token)
            } else if token == "--" {
                optionsEnded = true
            } else {
                try parseOption(token, tokens: tokens, index: &index, signature: signature, into: &parsed)
            }
        }
        try assign(positionals, to: signature.positionals, into: &parsed)
        return parsed
    }

    /// Parses options up to the first positional token (the command name) and returns the
    /// options and the unparsed rest, which starts with that token. Used for the global options
    /// written before the command. A `--` ends the options: the token after it is the command
    /// and the ones after that stay positional (the rest gets its own `--`).
    static func parseLeadingOptions(_ tokens: [String], signature: CommandSignature)
        throws(CLIError) -> (options: ParsedArguments, rest: [String]) {
        var parsed = ParsedArguments()
        var index = tokens.startIndex
        while index < tokens.endIndex {
            let token = tokens[index]
            index += 1
            if !isOption(token) {
                return (parsed, Array(tokens[(index - 1)...]))
            } else if token == "--" {
                guard index < tokens.endIndex else { return (parsed, []) }
                return (parsed, [tokens[index], "--"] + tokens[(index + 1)...])
            } else {
                try parseOption(token, tokens: tokens, index: &index, signature: signature, into: &parsed)
            }
        }
        return (parsed, [])
    }

    /// Whether `token` is `--`, an option or a bundle of short options (not `-` alone).
    private static func isOption(_ token: String) -> Bool {
        token.hasPrefix("-") && token != "-"
    }

    /// Whether `token` may be taken as the value of the option before it.
    private static func isValue(_ token: String) -> Bool {
        (!isOption(token) || isNegativeNumber(token)) && !token.isEmpty
    }

    /// `-5`, `-5s`, `-.5`: a minus and a digit, which no option spells.
    private static func isNegativeNumber(_ token: String) -> Bool {
        let digits = token.dropFirst(token.hasPrefix("-.") ? 2 : 1)
        return token.hasPrefix("-") && digits.first.map { ("0"..."9").contains($0) } == true
    }

    /// Parses one option token (`--name`, `--name=value` or a short bundle), taking a value from
    /// the next token if needed (advancing `index`).
    private static func parseOption(_ token: String, tokens: [String], index: inout Int,
                                    signature: CommandSignature,
                                    into parsed: inout ParsedArguments) throws(CLIError) {
        if token.hasPrefix("--") {
            let body = token.dropFirst(2)
            let name: Substring
            let inlineValue: Substring?
            if let equals = body.firstIndex(of: "=") {
                name = body[..<equals]
                inlineValue = body[body.index(after: equals)...]
            } else {
                name = body
                inlineValue = nil
            }
            let spelling = "--\(name)"
            guard let option = signature.options.first(where: { $0.long == String(name) }) else {
                throw .usage("unknown option '\(spelling)'")
            }
            if option.takesValue {
                let value: String
                if let inlineValue {
                    value = String(inlineValue)
                } else {
                    value = try nextValue(tokens: tokens, index: &index, spelling: spelling)
                }
                try record(value, for: option, spelling: spelling, into: &parsed)
            } else {
                guard inlineValue == nil else { throw .usage("option '\(spelling)' takes no value") }
                try record("", for: option, spelling: spelling, into: &parsed)
            }
            return
        }
        var bundle = token.dropFirst()
        while let letter = bundle.popFirst() {
            let spelling = "-\(letter)"
            guard let option = signature.options.first(where: { $0.short == letter }) else {
                throw .usage("unknown option '\(spelling)'")
            }
            if option.takesValue {
                let value = bundle.isEmpty
                    ? try nextValue(tokens: tokens, index: &index, spelling: spelling)
                    : String(bundle)
                bundle = ""
                try record(value, for: option, spelling: spelling, into: &parsed)
            } else {
                try record("", for: option, spelling: spelling, into: &parsed)
            }
        }
    }

    /// The token at `index` as an option value, or `option '…' needs a value`.
    private static func nextValue(tokens: [String], index: inout Int, spelling: String) throws(CLIError) -> String {
        guard index < tokens.endIndex, isValue(tokens[index]) else {
            throw .usage("option '\(spelling)' needs a value")
        }
        index += 1
        return tokens[index - 1]
    }

    private static func record(_ value: String, for option: OptionSpec, spelling: String,
                               into parsed: inout ParsedArguments) throws(CLIError) {
        if option.takesValue && value.isEmpty {
            throw .usage("option '\(spelling)' needs a value")
        }
        if !option.isRepeatable && parsed.occurrences(option) > 0 {
            throw .usage("option '\(option.displayName)' given more than once")
        }
        parsed.append(value, for: option)
    }

    /// Hands positional tokens to the signature's arguments in order.
    static func assign(_ tokens: [String], to specs: [PositionalSpec],
                       into parsed: inout ParsedArguments) throws(CLIError) {
        var remaining = tokens[...]
        for spec in specs {
            switch spec.arity {
            case .required:
                guard let value = remaining.popFirst() else { throw .usage("missing argument \(spec.name)") }
                parsed.append(value, for: spec)
            case .optional:
                if let value = remaining.popFirst() { parsed.append(value, for: spec) }
            case .variadic:
                while let value = remaining.popFirst() { parsed.append(value, for: spec) }
            }
        }
        if let extra = remaining.first {
            throw .usage("unexpected argument '\(extra)'")
        }
    }
}
