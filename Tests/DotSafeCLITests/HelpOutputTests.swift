import DotSafeCLI
import Testing

/// Golden output of the help and version texts: a change here is a change users see.
@Suite struct HelpOutputTests {
    static let programHelp = """
        OVERVIEW: Encrypted vaults, opened with a pattern and mounted with FUSE.

        USAGE: dotsafe [--keyring PATH] COMMAND [ARGUMENTS...]

        COMMANDS:
          init            Create a storage folder (and the keyring, if none exists).
          mount           Open the vault a pattern finds and mount it as a folder.
          lock            Lock a vault: write changes, unmount, erase the keys.
          keyring         Export the keyring under a passphrase, or import an export.
          help            Show help for dotsafe or for one command.
          version         Print the version of dotsafe.

        GLOBAL OPTIONS:
          --keyring PATH  Use the keyring file at PATH (default: $DOTSAFE_KEYRING if
                          set, else the keyring under $XDG_DATA_HOME/dotsafe/).
          -h, --help      Show help.
          --version       Print the version.

        See 'dotsafe help COMMAND' for help on a command.

        """

    static let versionHelp = """
        OVERVIEW: Print the version of dotsafe.

        USAGE: dotsafe version

        OPTIONS:
          -h, --help      Show help.

        GLOBAL OPTIONS:
          --keyring PATH  Use the keyring file at PATH (default: $DOTSAFE_KEYRING if
                          set, else the keyring under $XDG_DATA_HOME/dotsafe/).

        """

    static let helpHelp = """
        OVERVIEW: Show help for dotsafe or for one command.

        USAGE: dotsafe help [COMMAND]

        ARGUMENTS:
          COMMAND         The command to describe; without it, list all commands.

        OPTIONS:
          -h, --help      Show help.

        GLOBAL OPTIONS:
          --keyring PATH  Use the keyring file at PATH (default: $DOTSAFE_KEYRING if
                          set, else the keyring under $XDG_DATA_HOME/dotsafe/).

        """

    @Test(arguments: [["--help"], ["-h"], ["help"], ["--keyring", "k", "--help"], ["--help", "--frob"]])
    func programHelp(arguments: [String]) {
        #expect(CLIRun(arguments) == CLIRun(status: 0, standardOutput: Self.programHelp))
    }

    @Test(arguments: [["--version"], ["version"], ["version", "--keyring=k"], ["--keyring", "k", "--version"]])
    func version(arguments: [String]) {
        #expect(CLIRun(arguments) == CLIRun(status: 0, standardOutput: "dotsafe 0.1.0\n"))
    }

    @Test func versionConstant() {
        #expect(DotSafeVersion.current == "0.1.0")
    }

    @Test(arguments: [["help", "version"], ["version", "--help"], ["version", "-h"], ["--help", "version"],
                      ["version", "extra", "--help"], ["version", "--frob", "-h"]])
    func versionHelp(arguments: [String]) {
        #expect(CLIRun(arguments) == CLIRun(status: 0, standardOutput: Self.versionHelp))
    }

    @Test(arguments: [["help", "help"], ["help", "--help"]])
    func helpHelp(arguments: [String]) {
        #expect(CLIRun(arguments) == CLIRun(status: 0, standardOutput: Self.helpHelp))
    }

    @Test func everyLineFitsEightyColumns() {
        let pages = [Self.programHelp] + DotSafeCLI.commands.map { $0.help } + [ProbeCommand.help]
        for line in pages.joined().split(separator: "\n") {
            #expect(line.count <= 80, "\(line)")
        }
    }

    @Test func listsOnlyRegisteredCommands() {
        let names = DotSafeCLI.commands.map { $0.name }
        #expect(names == ["init", "mount", "lock", "keyring", "help", "version"])
    }
}
