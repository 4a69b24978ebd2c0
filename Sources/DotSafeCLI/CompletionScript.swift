/// Shell completions for bash, zsh and fish, made from the same command table as `--help`, so
/// that a new command or option is completed without a second copy of its name or help.
enum CompletionScript {
    enum Shell: String, CaseIterable { case bash, zsh, fish }

    /// What a value (of an option or a positional argument) is completed with.
    enum ValueKind: Equatable {
        case none, file, directory, command
        case words([String])
    }

    static func script(for shell: Shell, commands: [any Command.Type]) -> String {
        switch shell {
        case .bash: bash(commands)
        case .zsh: zsh(commands)
        case .fish: fish(commands)
        }
    }

    /// Options every command accepts, and those accepted before the command name only.
    static var commonOptions: [OptionSpec] { GlobalOptions.options + [StandardOptions.help] }
    static var leadingOptions: [OptionSpec] { commonOptions + [StandardOptions.version] }

    static func options(of command: any Command.Type) -> [OptionSpec] {
        command.signature.options + command.globalOptions + [StandardOptions.help]
    }

    /// By the placeholder's name: paths are files, storages and mount points folders.
    static func kind(ofPlaceholder name: String) -> ValueKind {
        switch name {
        case "PATH", "FILE": .file
        case "DIR", "STORAGE", "MOUNTPOINT": .directory
        case "COMMAND": .command
        default: .none
        }
    }

    static func kind(of positional: PositionalSpec) -> ValueKind {
        positional.values.isEmpty ? kind(ofPlaceholder: positional.name) : .words(positional.values)
    }

    static func spellings(_ option: OptionSpec) -> [String] {
        [option.short.map { "-\($0)" }, option.long.map { "--\($0)" }].compactMap { $0 }
    }

    // MARK: bash

    private static func bash(_ commands: [any Command.Type]) -> String {
        let all = commands.flatMap { options(of: $0) } + leadingOptions
        var valueOptions: [String: ValueKind] = [:]
        for option in all { if let placeholder = option.placeholder { for word in spellings(option) { valueOptions[word] = kind(ofPlaceholder: placeholder) } } }
        let names = commands.map { $0.name }.joined(separator: " ")
        func reply(_ kind: ValueKind) -> String {
            switch kind {
            case .none: "COMPREPLY=()"
            case .file: "COMPREPLY=($(compgen -f -- \"$cur\"))"
            case .directory: "COMPREPLY=($(compgen -d -- \"$cur\"))"
            case .command: "COMPREPLY=($(compgen -W \"\(names)\" -- \"$cur\"))"
            case .words(let words): "COMPREPLY=($(compgen -W \"\(words.joined(separator: " "))\" -- \"$cur\"))"
            }
        }
        var text = """
            # bash completion for dotsafe, made by 'dotsafe completion bash' from its command table.
            _dotsafe() {
                local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
                local subcommand= word positional=0 skip=0 i
                for ((i = 1; i < COMP_CWORD; i++)); do
                    word=${COMP_WORDS[i]}
                    if ((skip)); then skip=0; continue; fi
                    case $word in
                        \(valueOptions.keys.sorted().joined(separator: "|"))) skip=1 ;;
                        -*) ;;
                        *) if [[ -z $subcommand ]]; then subcommand=$word; else ((positional++)); fi ;;
                    esac
                done
                case $prev in

            """
        for (word, kind) in valueOptions.sorted(by: { $0.key < $1.key }) {
            text += "        \(word)) \(reply(kind)); return ;;\n"
        }
        text += """
                esac
                if [[ $cur == -* ]]; then
                    case $subcommand in
                        '') COMPREPLY=($(compgen -W "\(leadingOptions.flatMap(spellings).joined(separator: " "))" -- "$cur")) ;;

            """
        for command in commands {
            text += "            \(command.name)) COMPREPLY=($(compgen -W \"\(options(of: command).flatMap(spellings).joined(separator: " "))\" -- \"$cur\")) ;;\n"
        }
        text += """
                    esac
                    return
                fi
                case $subcommand in
                    '') \(reply(.command)) ;;

            """
        for command in commands {
            let positionals = command.signature.positionals
            guard !positionals.isEmpty else { continue }
            text += "        \(command.name))\n            case $positional in\n"
            for (index, positional) in positionals.enumerated() {
                let pattern = positional.arity == .variadic ? "*" : "\(index)"
                text += "                \(pattern)) \(reply(kind(of: positional))) ;;\n"
            }
            text += "            esac ;;\n"
        }
        text += """
                esac
            }
            complete -o filenames -F _dotsafe dotsafe

            """
        return text
    }

    // MARK: zsh

    private static func zsh(_ commands: [any Command.Type]) -> String {
        let quoted = ShellWord.quoted
        func bracketed(_ help: String) -> String {
            "[" + help.map { "[]\\".contains($0) ? "\\\($0)" : String($0) }.joined() + "]"
        }
        func action(_ kind: ValueKind) -> String {
            switch kind {
            case .none: " "
            case .file: "_files"
            case .directory: "_files -/"
            case .command: "(\(commands.map { $0.name }.joined(separator: " ")))"
            case .words(let words): "(\(words.joined(separator: " ")))"
            }
        }
        func specs(_ option: OptionSpec) -> [String] {
            let repeated = option.isRepeatable ? "*" : ""
            return spellings(option).map { spelling in
                guard let placeholder = option.placeholder else { return quoted(repeated + spelling + bracketed(option.help)) }
                let suffix = spelling.hasPrefix("--") ? "=" : "+"
                return quoted(repeated + spelling + suffix + bracketed(option.help) + ":\(placeholder):" + action(kind(ofPlaceholder: placeholder)))
            }
        }
        func positionalSpec(_ positional: PositionalSpec) -> String {
            let prefix = switch positional.arity { case .required: ":"; case .optional: "::"; case .variadic: "*:" }
            return quoted(prefix + positional.name + ":" + action(kind(of: positional)))
        }
        let continuation = " \\\n"
        var text = """
            #compdef dotsafe
            # zsh completion for dotsafe, made by 'dotsafe completion zsh' from its command table.
            _dotsafe() {
                local context state state_descr line
                typeset -A opt_args
                local -a commands
                commands=(

            """
        for command in commands {
            text += "        " + quoted(command.name + ":" + command.summary) + "\n"
        }
        text += "    )\n    _arguments -C" + continuation
        text += leadingOptions.flatMap(specs).map { "        " + $0 }.joined(separator: continuation) + continuation
        text += """
                    '1:command:->command' \\
                    '*::argument:->argument'
                case $state in
                    command) _describe -t commands 'dotsafe command' commands ;;
                    argument)
                        case $words[1] in

            """
        for command in commands {
            let lines = options(of: command).flatMap(specs) + command.signature.positionals.map(positionalSpec)
            text += "                \(command.name)) _arguments" + continuation
            text += lines.map { "                    " + $0 }.joined(separator: continuation) + " ;;\n"
        }
        text += """
                        esac ;;
                esac
            }
            _dotsafe "$@"

            """
        return text
    }

    // MARK: fish

    private static func fish(_ commands: [any Command.Type]) -> String {
        func quoted(_ text: String) -> String {
            "'" + text.map { $0 == "'" || $0 == "\\" ? "\\\($0)" : String($0) }.joined() + "'"
        }
        func flags(_ option: OptionSpec) -> String {
            var parts: [String] = []
            if let short = option.short { parts.append("-s \(short)") }
            if let long = option.long { parts.append("-l \(long)") }
            if let placeholder = option.placeholder {
                parts.append("-r")
                switch kind(ofPlaceholder: placeholder) {
                case .file: parts.append("-F")
                case .directory: parts.append("-a '(__fish_complete_directories)'")
                case .command: parts.append("-a " + quoted(commands.map { $0.name }.joined(separator: " ")))
                case .words(let words): parts.append("-a " + quoted(words.joined(separator: " ")))
                case .none: break
                }
            }
            return parts.joined(separator: " ") + " -d " + quoted(option.help)
        }
        var text = "# fish completion for dotsafe, made by 'dotsafe completion fish' from its command table.\n"
        text += "complete -c dotsafe -f\n"
        for command in commands {
            text += "complete -c dotsafe -n __fish_use_subcommand -a \(command.name) -d \(quoted(command.summary))\n"
        }
        text += "complete -c dotsafe \(flags(StandardOptions.help))\n"
        for option in GlobalOptions.options + [StandardOptions.version] {
            text += "complete -c dotsafe -n __fish_use_subcommand \(flags(option))\n"
        }
        for command in commands {
            let condition = "-n '__fish_seen_subcommand_from \(command.name)'"
            for option in command.signature.options + command.globalOptions { text += "complete -c dotsafe \(condition) \(flags(option))\n" }
            for positional in command.signature.positionals {
                switch kind(of: positional) {
                case .none: break
                case .file: text += "complete -c dotsafe \(condition) -F\n"
                case .directory: text += "complete -c dotsafe \(condition) -a '(__fish_complete_directories)'\n"
                case .command: text += "complete -c dotsafe \(condition) -a \(quoted(commands.map { $0.name }.joined(separator: " ")))\n"
                case .words(let words): text += "complete -c dotsafe \(condition) -a \(quoted(words.joined(separator: " ")))\n"
                }
            }
        }
        return text
    }
}
