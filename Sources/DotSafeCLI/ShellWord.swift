/// Text made into one word of a POSIX shell command line, for commands that DotSafe prints
/// for people to copy and paste ("Lock it with: dotsafe lock '/home/me/My Vault'").
enum ShellWord {
    /// Bytes that no shell treats specially in a word: a word made only of them needs no quotes.
    private static let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-".unicodeScalars)

    /// `text` as it is when nothing in it needs quoting, else `quoted(text)`.
    static func word(_ text: String) -> String {
        !text.isEmpty && text.unicodeScalars.allSatisfy(plain.contains) ? text : quoted(text)
    }

    /// `text` in single quotes, each `'` in it written `'\''`: the shell takes every other
    /// byte ($, `, \, spaces, newlines) literally.
    static func quoted(_ text: String) -> String {
        "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
