import Foundation

/// A value as one word of a shell command line, for the commands tapemu tells a person to run
/// next (`tapemu charges --order-id …`, `tapemu pending close …`): as it is when the shell reads
/// it back unchanged, else in single quotes (a quote inside closed, escaped and reopened). An
/// order id may hold spaces, quotes or `$`: pasted as printed, the command must name that order.
enum ShellWord {
    static func quoted(_ value: String) -> String {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { s in
            s.isASCII && (s.properties.isAlphabetic || ("0"..."9").contains(s) || "_-./:=@%+,".unicodeScalars.contains(s))
        }
        return plain ? value : "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
