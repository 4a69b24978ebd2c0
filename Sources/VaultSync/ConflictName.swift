/// The name of a second version kept beside the first (R-SYN-4):
/// `NAME.conflict-DEVICE-YYYYMMDDTHHMMSS.EXT`, the extension last so that the copy still opens
/// with the same program. A folder, a name with no dot, or one whose only dot leads (`.bashrc`)
/// has no extension: `NAME.conflict-DEVICE-TIME`.
public enum ConflictName {
    /// The name for `name` made by `device` at `time` (Unix seconds, shown in UTC); `number` > 1
    /// tells apart several such names in one folder (`…-2.EXT`). The result is a valid name:
    /// the original part is shortened to fit 255 bytes.
    public static func make(_ name: String, device: String, time: Int64, number: Int = 1, hasExtension: Bool = true) -> String {
        var stem = Substring(name), suffix = ""
        if hasExtension, let dot = name.lastIndex(of: "."), dot != name.startIndex, name.index(after: dot) != name.endIndex {
            stem = name[..<dot]
            suffix = String(name[dot...])
        }
        let cleanDevice = String(device.map { $0 == "/" || $0 == "\0" || $0 == "\n" ? "_" : $0 }.prefix(64))
        let tag = ".conflict-\(cleanDevice.isEmpty ? "device" : cleanDevice)-\(timestamp(time))" + (number > 1 ? "-\(number)" : "")
        var keptSuffix = suffix
        if keptSuffix.utf8.count > 64 { keptSuffix = "" ; stem = Substring(name) }
        while stem.utf8.count + tag.utf8.count + keptSuffix.utf8.count > 255 { stem = stem.dropLast() }
        return stem + tag + keptSuffix
    }

    /// `YYYYMMDDTHHMMSS` in UTC (days to a civil date: the proleptic Gregorian calendar).
    public static func timestamp(_ time: Int64) -> String {
        let days = time >= 0 ? time / 86_400 : (time - 86_399) / 86_400
        let seconds = time - days * 86_400
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)\(two(month))\(two(day))T\(two(seconds / 3600))\(two(seconds / 60 % 60))\(two(seconds % 60))"
    }
}
