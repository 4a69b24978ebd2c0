import Foundation

/// Manual pages in roff (man(7)), made from the same command table as `--help`: `dotsafe(1)` for
/// the program and `dotsafe-NAME(1)` for each command. `dotsafe help --man [COMMAND]` prints
/// them; the Debian package installs them (tools/package).
enum ManPage {
    /// `dotsafe(1)`: what DotSafe is, every command, the global options, exit status, environment.
    static func program(commands: [any Command.Type]) -> String {
        var page = header(DotSafeCLI.name, summary: HelpFormatter.overview)
        page += section("SYNOPSIS")
        page += synopsis(DotSafeCLI.name, words: GlobalOptions.options.map(usageWord) + ["\\fICOMMAND\\fR", "[\\fIARGUMENTS\\fR...]"])
        page += section("DESCRIPTION")
        page += paragraph(description)
        page += section("COMMANDS")
        for command in commands {
            page += ".TP\n.B \(escape(command.name))\n\(escape(command.summary))\nSee \\fB\(pageName(command))\\fR(1).\n"
        }
        page += section("GLOBAL OPTIONS")
        page += (GlobalOptions.options + [StandardOptions.help, StandardOptions.version]).map(optionItem).joined()
        page += exitStatus + environment
        page += section("SEE ALSO")
        page += commands.map { "\\fB\(pageName($0))\\fR(1)" }.joined(separator: ",\n") + ",\n\\fBfusermount3\\fR(1)\n"
        return page
    }

    /// `dotsafe-NAME(1)`: the command's help, as a manual page.
    static func command(_ command: any Command.Type) -> String {
        let signature = command.signature
        var page = header(pageName(command), summary: command.summary)
        page += section("SYNOPSIS")
        page += synopsis("\(DotSafeCLI.name) \(command.name)",
                         words: signature.options.map(usageWord) + signature.positionals.map(usageWord))
        page += section("DESCRIPTION")
        page += paragraph(command.summary)
        if !command.discussion.isEmpty {
            page += ".PP\n.nf\n" + command.discussion.split(separator: "\n", omittingEmptySubsequences: false)
                .map { escapeLine(String($0)) }.joined(separator: "\n") + "\n.fi\n"
        }
        if !signature.positionals.isEmpty {
            page += section("ARGUMENTS")
            page += signature.positionals.map { ".TP\n.I \(escape($0.name))\n\(escape($0.help))\n" }.joined()
        }
        page += section("OPTIONS")
        page += (signature.options + [StandardOptions.help]).map(optionItem).joined()
        if !command.globalOptions.isEmpty {
            page += section("GLOBAL OPTIONS")
            page += command.globalOptions.map(optionItem).joined()
        }
        page += exitStatus
        page += section("SEE ALSO")
        page += "\\fB\(DotSafeCLI.name)\\fR(1)\n"
        return page
    }

    static func pageName(_ command: any Command.Type) -> String { "\(DotSafeCLI.name)-\(command.name)" }

    // MARK: Text that only the manual has

    static let description = """
        DotSafe keeps files in a vault: a folder of same-size encrypted files with random names, \
        the storage. A pattern on a 5x5 grid (such as b2-c2-d3-d4-c4-b4-a5) opens one vault, which \
        dotsafe mount presents as an ordinary folder; dotsafe lock writes it, unmounts it and erases \
        its keys. One storage holds any number of vaults and nothing in it says how many: a pattern \
        that opens nothing opens a new, empty vault. The salt that turns patterns into keys lives in \
        the keyring, never in the storage; keep a backup of it.
        """

    static let exitStatus = section("EXIT STATUS") + """
        .TP
        .B 0
        Success.
        .TP
        .B 1
        Failure; one line on standard error says why, beginning with \\fBdotsafe:\\fR.
        .TP
        .B 64
        A wrong command line: an unknown option, a missing or extra argument.
        .TP
        .B 128 + N
        \\fBsync\\fR stopped by signal N: 130 for SIGINT (Ctrl-C), 143 for SIGTERM, 129 for SIGHUP.

        """

    static let environment = section("ENVIRONMENT") + """
        .TP
        .B \(GlobalOptions.keyringEnvironmentVariable)
        The keyring to use when \\fB\\-\\-keyring\\fR is not given.
        .TP
        .B XDG_DATA_HOME
        Where the default keyring lives: \\fI$XDG_DATA_HOME/dotsafe/\\fR (default \\fI~/.local/share/dotsafe/\\fR).

        """

    // MARK: Pieces

    private static func header(_ name: String, summary: String) -> String {
        ".TH \(name.uppercased()) 1 \"\" \"\(DotSafeCLI.name) \(DotSafeVersion.current)\" \"User Commands\"\n"
            + ".ad l\n" + section("NAME") + "\(escape(name)) \\- \(escape(summary.trimmingFinalPeriod()))\n"
    }

    private static func section(_ title: String) -> String { ".SH \(title)\n" }

    private static func paragraph(_ text: String) -> String { ".PP\n\(escapeLine(text))\n" }

    private static func synopsis(_ prefix: String, words: [String]) -> String {
        ".B \(escape(prefix))\n" + words.joined(separator: "\n") + "\n"
    }

    private static func usageWord(_ option: OptionSpec) -> String {
        let name = "\\fB" + escape(option.long.map { "--\($0)" } ?? "-\(option.short!)") + "\\fR"
        let word = option.placeholder.map { "[\(name) \\fI\(escape($0))\\fR]" } ?? "[\(name)]"
        return option.isRepeatable ? word + "..." : word
    }

    private static func usageWord(_ positional: PositionalSpec) -> String {
        let name = "\\fI\(escape(positional.name))\\fR"
        switch positional.arity {
        case .required: return name
        case .optional: return "[\(name)]"
        case .variadic: return "[\(name)...]"
        }
    }

    private static func optionItem(_ option: OptionSpec) -> String {
        let names = [option.short.map { "-\($0)" }, option.long.map { "--\($0)" }].compactMap { $0 }
            .map { "\\fB\(escape($0))\\fR" }.joined(separator: ", ")
        let value = option.placeholder.map { " \\fI\(escape($0))\\fR" } ?? ""
        return ".TP\n\(names)\(value)\n\(escape(option.help))\n"
    }

    /// Text for a roff line: backslashes and hyphens escaped.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
    }

    /// A whole input line: also kept from being read as a request (a leading `.` or `'`).
    private static func escapeLine(_ text: String) -> String {
        let escaped = escape(text)
        return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
    }
}

extension String {
    fileprivate func trimmingFinalPeriod() -> String { hasSuffix(".") ? String(dropLast()) : self }
}
