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
          status          List your open vaults: mount point, storage, since when.
          contact         Print the mounted vault's contact code, to be shared with.
          share           Share the mounted vault with the vault of a contact code.
          unshare         Withdraw the mounted vault from the vault of a contact code.
          fsck            Check a vault; with --repair, drop what cannot be read.
          audit           Show what the storage's metadata tells an observer.
          sync            Sync a vault with a remote that rclone reaches.
          keyring         Show, back up, restore or move the keyring.
          repattern       Change the pattern that opens a vault.
          upgrade         Convert a vault's index to version 3.
          completion      Print the shell completion script for bash, zsh or fish.
          help            Show help for dotsafe or for one command.
          version         Print the version of dotsafe.

        GLOBAL OPTIONS:
          --keyring PATH  Use the keyring file at PATH, or the desktop's Secret Service
                          with 'secret-service' (default: $DOTSAFE_KEYRING if set, else
                          the keyring under $XDG_DATA_HOME/dotsafe/).
          -h, --help      Show help.
          -V, --version   Print the version.

        See 'dotsafe help COMMAND' for help on a command.

        """

    static let versionHelp = """
        OVERVIEW: Print the version of dotsafe.

        USAGE: dotsafe version

        OPTIONS:
          -h, --help  Show help.

        """

    static let fsckHelp = """
        OVERVIEW: Check a vault; with --repair, drop what cannot be read.

        Decrypts every index page, chunk and pack member of the vault the pattern
        opens, and checks its storage files (present, of the right size, none stray,
        a count in steps of 16). Damaged items are named by path. Files that an
        interrupted session left, and the download folder of a killed sync, which
        the next writable mount or sync removes, are counted on one line: no
        damage. Exit status: 0 clean, 1 damage or failure.
        Nothing is written without --repair, and never while the vault is mounted.

        --repair lists what it drops, then keeps every item and every chunk that
        opens: an unreadable chunk becomes a hole (256 KiB of zeros in its place;
        the file keeps its size and its other chunks), and a small file whose pack
        member does not open keeps its name and size but reads as zeros. Dropping
        whole items would lose the readable part of large files; the list says
        which byte ranges became zeros. Missing files of the vault are made again,
        stray ones removed. An index that does not open is never repaired: fsck
        then writes nothing.

        USAGE: dotsafe fsck [--pattern P] [--pattern-stdin] [--pattern-file FILE]
                            [--pattern-command CMD] [--shared CODE] [--repair] STORAGE

        ARGUMENTS:
          STORAGE               The storage folder (made by 'dotsafe init').

        OPTIONS:
          --pattern P           The pattern, like b2-c2-d3-d4-c4-b4-a5.
          --pattern-stdin       Read the pattern as one line from standard input.
          --pattern-file FILE   Read the pattern from the first line of FILE (mode 600,
                                yours).
          --pattern-command CMD
                                Run CMD with /bin/sh and read the pattern from its
                                output.
          --shared CODE         Open the vault the holder of this contact code shared
                                with the vault the pattern opens.
          --repair              Drop what cannot be read, then commit.
          -h, --help            Show help.

        GLOBAL OPTIONS:
          --keyring PATH        Use the keyring file at PATH, or the desktop's Secret
                                Service with 'secret-service' (default: $DOTSAFE_KEYRING
                                if set, else the keyring under $XDG_DATA_HOME/dotsafe/).

        """

    static let helpHelp = """
        OVERVIEW: Show help for dotsafe or for one command.

        USAGE: dotsafe help [--man] [COMMAND]

        ARGUMENTS:
          COMMAND     The command to describe; without it, list all commands.

        OPTIONS:
          --man       Print it as a manual page (roff) instead.
          -h, --help  Show help.

        """

    @Test(arguments: [[], ["--help"], ["-h"], ["help"], ["--keyring", "k", "--help"], ["--help", "--frob"]])
    func programHelp(arguments: [String]) {
        #expect(CLIRun(arguments) == CLIRun(status: 0, standardOutput: Self.programHelp))
    }

    @Test(arguments: [["--version"], ["-V"], ["version"], ["--keyring", "k", "version"], ["--keyring", "k", "--version"]])
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

    @Test(arguments: [["help", "fsck"], ["fsck", "--help"]])
    func fsckHelp(arguments: [String]) {
        #expect(CLIRun(arguments) == CLIRun(status: 0, standardOutput: Self.fsckHelp))
    }

    /// `sync --help` gives the way out of a first sync cut short and refused since (README,
    /// FORMAT.md §13.12, "Replacing a partial join"), with its warning.
    @Test func syncHelpNamesTheWayOutOfAPartialJoin() {
        let help = CLIRun(["sync", "--help"])
        #expect(help.status == 0 && help.standardError.isEmpty)
        #expect(help.standardOutput.contains("""
            With --replace-partial-join you say that no other pattern's state of this
            vault is in STORAGE: those files are replaced by the remote's. If there is
            one, it is destroyed.
            """), "\(help.standardOutput)")
        #expect(help.standardOutput.contains("""
              --replace-partial-join
                                    Replace what a cut-short first sync left where the
                                    remote changed it since.
            """), "\(help.standardOutput)")
    }

    @Test func everyLineFitsEightyColumns() {
        let pages = [Self.programHelp] + DotSafeCLI.commands.map { $0.help } + [ProbeCommand.help]
        for line in pages.joined().split(separator: "\n") {
            #expect(line.count <= 80, "\(line)")
        }
    }

    @Test func listsOnlyRegisteredCommands() {
        let names = DotSafeCLI.commands.map { $0.name }
        #expect(names == ["init", "mount", "lock", "status", "contact", "share", "unshare", "fsck", "audit", "sync", "keyring", "repattern",
                          "upgrade", "completion", "help", "version"])
    }
}
