/// Renders usage lines and help pages from commands' signatures, so that help never
/// disagrees with what the parser accepts.
enum HelpFormatter {
    /// Lines are wrapped to this many columns.
    static let width = 80
    /// Help texts of rows start at most this far in; longer labels put the text on the next line.
    static let maximumLabelColumn = 24

    /// What `dotsafe` is, atop `dotsafe --help`.
    static let overview = "Encrypted vaults, opened with a pattern and mounted with FUSE."

    // MARK: Pages

    /// `dotsafe --help`: the commands and the global options.
    static func programHelp(commands: [any Command.Type]) -> String {
        let name = DotSafeCLI.name
        let globals = GlobalOptions.options + [StandardOptions.help, StandardOptions.version]
        let usageWords = ["USAGE:", name] + GlobalOptions.options.map(usageWord) + ["COMMAND", "[ARGUMENTS...]"]
        let commandRows = commands.map { (label: $0.name, text: $0.summary) }
        let optionRows = globals.map(row)
        let column = labelColumn(for: commandRows + optionRows)
        return page([
            overviewLine(overview),
            wrapWords(usageWords, indent: usageIndent(name)).joined(separator: "\n"),
            section("COMMANDS", commandRows, column: column),
            section("GLOBAL OPTIONS", optionRows, column: column),
            "See '\(name) help COMMAND' for help on a command.",
        ])
    }

    /// `dotsafe help NAME`: what the command does and everything it accepts.
    static func help(for command: any Command.Type) -> String {
        let signature = command.signature
        let argumentRows = signature.positionals.map { (label: $0.name, text: $0.help) }
        let optionRows = (signature.options + [StandardOptions.help]).map(row)
        let globalRows = command.globalOptions.map(row)
        let column = labelColumn(for: argumentRows + optionRows + globalRows)
        return page([
            overviewLine(command.summary),
            command.discussion,
            command.usage,
            section("ARGUMENTS", argumentRows, column: column),
            section("OPTIONS", optionRows, column: column),
            section("GLOBAL OPTIONS", globalRows, column: column),
        ])
    }

    /// `USAGE: dotsafe NAME [--option VALUE] ARGUMENT…`, wrapped if long (no final newline).
    static func usage(for command: any Command.Type) -> String {
        let signature = command.signature
        let prefix = "\(DotSafeCLI.name) \(command.name)"
        let words = ["USAGE:", prefix] + signature.options.map(usageWord) + signature.positionals.map(usageWord)
        return wrapWords(words, indent: usageIndent(prefix)).joined(separator: "\n")
    }

    // MARK: Pieces

    /// `OVERVIEW: text`, wrapped with continuation lines aligned under the text.
    private static func overviewLine(_ text: String) -> String {
        let words = ["OVERVIEW:"] + text.split(separator: " ").map(String.init)
        return wrapWords(words, indent: "OVERVIEW: ".count).joined(separator: "\n")
    }

    /// The non-empty `blocks`, separated by blank lines, ending in one newline.
    private static func page(_ blocks: [String]) -> String {
        blocks.map { $0.trimmingTrailingNewlines() }.filter { !$0.isEmpty }.joined(separator: "\n\n") + "\n"
    }

    private static func usageIndent(_ prefix: String) -> Int {
        "USAGE: \(prefix) ".count
    }

    private static func usageWord(_ option: OptionSpec) -> String {
        let name = option.long.map { "--\($0)" } ?? "-\(option.short!)"
        let word = option.placeholder.map { "[\(name) \($0)]" } ?? "[\(name)]"
        return option.isRepeatable ? word + "..." : word
    }

    private static func usageWord(_ positional: PositionalSpec) -> String {
        switch positional.arity {
        case .required: positional.name
        case .optional: "[\(positional.name)]"
        case .variadic: "[\(positional.name)...]"
        }
    }

    /// `-o, --option VALUE` for the option rows of a help page.
    private static func row(_ option: OptionSpec) -> (label: String, text: String) {
        let names = [option.short.map { "-\($0)" }, option.long.map { "--\($0)" }].compactMap { $0 }
        var label = names.joined(separator: ", ")
        if let placeholder = option.placeholder { label += " \(placeholder)" }
        return (label, option.help)
    }

    private static func labelColumn(for rows: [(label: String, text: String)]) -> Int {
        let longest = rows.map { 2 + $0.label.count + 2 }.max() ?? 0
        return min(longest, maximumLabelColumn)
    }

    /// A titled block of rows, or nothing if there are no rows.
    private static func section(_ title: String, _ rows: [(label: String, text: String)], column: Int) -> String {
        guard !rows.isEmpty else { return "" }
        var text = "\(title):\n"
        for row in rows {
            let label = "  " + row.label
            var lines = wrap(row.text, indent: column)
            if label.count + 2 <= column {
                lines[0] = label + String(repeating: " ", count: column - label.count) + lines[0].dropFirst(column)
            } else {
                lines.insert(label, at: 0)
            }
            text += lines.joined(separator: "\n") + "\n"
        }
        return text
    }

    /// `text` split at spaces into lines of at most `width` columns, each indented by `indent`.
    private static func wrap(_ text: String, indent: Int) -> [String] {
        let words = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        return wrapWords(words, indent: indent, indentFirstLine: true)
    }

    /// `words` joined by spaces into lines of at most `width` columns; lines after the first
    /// (and the first too if `indentFirstLine`) are indented by `indent`. A word longer than a
    /// line gets a line of its own.
    private static func wrapWords(_ words: [String], indent: Int, indentFirstLine: Bool = false) -> [String] {
        let margin = String(repeating: " ", count: indent)
        var lines: [String] = []
        var line = indentFirstLine ? margin : ""
        var lineHasWords = false
        for word in words {
            if lineHasWords && line.count + 1 + word.count > width {
                lines.append(line)
                line = margin
                lineHasWords = false
            }
            line += (lineHasWords ? " " : "") + word
            lineHasWords = true
        }
        lines.append(line)
        return lines
    }
}

extension String {
    fileprivate func trimmingTrailingNewlines() -> String {
        var text = self
        while text.hasSuffix("\n") { text.removeLast() }
        return text
    }
}
