/// One round of two devices' syncs against one remote, and the outcomes docs/SYNC-DESIGN.md §3.4
/// allows for it. Nothing may be lost. Only the race that step 7 cannot close leaves anything
/// beyond the expected files: a root written over this device's after its read-back, which the
/// next sync merges without a base (step 3), saying `warning`. The file edited in the round then
/// differs on the two sides and is kept twice (§2: the local version becomes a conflict copy named
/// for the device that changed it last). Both versions' texts are kept, and nothing else differs.
struct RaceRound {
    static let warning = "dotsafe: warning: another device's sync replaced this device's last root at the same moment: "
        + "merged without a common state, so files deleted since may come back and files changed on one side appear as "
        + "conflict copies\n"

    /// The files both devices held when the round began (earlier rounds' conflict copies too).
    var before: [String: String]
    /// The files the round made.
    var added: [String: String]
    /// The file edited in the round, and its text from that edit.
    var shared: String
    var edit: String
    /// The device that wrote each text `shared` has held: a conflict copy is named for it.
    var authors: [String: String]
    /// How many syncs of the round said `warning`.
    var warnings: Int

    /// What is wrong with `held`, each device's files after the round (name: text); none: an
    /// outcome the design allows.
    func problems(_ held: [String: [String: String]]) -> [String] {
        guard let first = held.keys.min(), let files = held[first] else { return ["no device's files"] }
        var problems: [String] = []
        for device in held.keys.sorted() where held[device] != files {
            problems.append("\(device) holds \(held[device]!.sorted { $0.key < $1.key }), \(first) \(files.sorted { $0.key < $1.key })")
        }
        for (name, text) in before.merging(added, uniquingKeysWith: { $1 }) where name != shared && files[name] != text {
            problems.append("\(name) holds \(files[name].map { "\"\($0)\"" } ?? "nothing"), not \"\(text)\"")
        }
        var copies: [String: String] = [:]
        for (name, text) in files.sorted(by: { $0.key < $1.key }) where before[name] == nil && added[name] == nil && name != shared {
            guard let author = authors[text], isConflictCopy(name, by: author) else {
                problems.append("\(name) (\"\(text)\") is no conflict copy of \(shared) named for the device that wrote its text")
                continue
            }
            copies[name] = text
        }
        guard let kept = files[shared] else { return problems + ["\(shared) is gone"] }
        if copies.isEmpty {
            if kept != edit { problems.append("\(shared) holds \"\(kept)\", not the round's edit \"\(edit)\"") }
            return problems
        }
        if copies.count > warnings {
            problems.append("\(copies.count) conflict copies, \(warnings) syncs that merged without a base (said the warning)")
        }
        let versions = Set(copies.values).union([kept]), raced: Set = [before[shared] ?? "", edit]
        if versions != raced { problems.append("\(shared) and its copies hold \(versions.sorted()), not both of \(raced.sorted())") }
        return problems
    }

    /// `NAME.conflict-DEVICE-YYYYMMDDTHHMMSS[-N].EXT` of `shared` (`ConflictName`).
    private func isConflictCopy(_ name: String, by device: String) -> Bool {
        let dot = shared.lastIndex(of: ".") ?? shared.endIndex
        let prefix = String(shared[..<dot]) + ".conflict-\(device)-", suffix = String(shared[dot...])
        guard name.hasPrefix(prefix), name.hasSuffix(suffix), name.count >= prefix.count + suffix.count else { return false }
        let tag = Array(name.dropFirst(prefix.count).dropLast(suffix.count))
        guard tag.count >= 15, tag[8] == "T", (tag[0..<8] + tag[9..<15]).allSatisfy(\.isASCIIDigit) else { return false }
        let number = tag.dropFirst(15)
        return number.isEmpty || number.first == "-" && number.count > 1 && number.dropFirst().allSatisfy(\.isASCIIDigit)
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
