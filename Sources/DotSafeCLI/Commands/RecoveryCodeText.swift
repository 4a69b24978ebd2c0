import Foundation
import VaultCore

/// The recovery code on the terminal: printed in rows of five groups, read back from a file or
/// typed (docs/FORMAT.md §8.3).
enum RecoveryCodeText {
    static let groupsPerRow = 5

    /// The code on standard output (only the groups, so it can be redirected); what it is and
    /// where to keep it on standard error.
    static func print(_ keyring: Keyring, _ context: CommandContext) throws {
        let groups = try keyring.recoveryCode()
        let err = context.standardError
        err.writeLine("Recovery code of the keyring \(keyring.backend.location):")
        for row in stride(from: 0, to: groups.count, by: groupsPerRow) {
            context.standardOutput.writeLine(groups[row ..< min(row + groupsPerRow, groups.count)].joined(separator: " "))
        }
        err.writeLine("""
            Write it on paper and keep it apart from this computer, where you keep important papers.
            It holds the salt only: on its own it opens nothing, but with it and the storage a short
            pattern can be guessed offline, so keep it as safe as the storage.
            Restore with: dotsafe keyring import --text (groups count from 1, left to right).
            """)
    }

    /// The code from FILE, or from standard input: typed on a terminal until an empty line.
    static func read(from file: String?, _ context: CommandContext) throws -> String {
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else { throw CLIError.failure("cannot read \(file)") }
            return String(decoding: data, as: UTF8.self)
        }
        let input = context.standardInput
        var text = ""
        var prompt: String? = input.isTerminal ? "Type the recovery code (17 groups), then an empty line:\n" : nil
        while let line = try input.readLine(prompt: prompt, secret: false) {
            prompt = nil
            let typed = String(decoding: line, as: UTF8.self)
            if typed.allSatisfy(\.isWhitespace) && !text.isEmpty { break }
            text += typed + "\n"
        }
        guard !text.allSatisfy(\.isWhitespace) else { throw CLIError.failure("no recovery code given") }
        return text
    }
}
