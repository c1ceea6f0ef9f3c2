import BERTLV
import PaymentRules
import ISO7816

/// A script of APDUs for `tapemu transmit`, in pcsc-tools `scriptor`'s syntax: one APDU in hex
/// per line (`00A4040007A0000000031010` or `00 A4 04 00 …`), a line ending in `\` going on on the
/// next, `#` starting a comment, empty lines skipped, `reset` resetting the card and `exit`
/// ending the script. Unlike scriptor, `reset` and `exit` count only alone on their line (a
/// comment mentioning "exit" ends nothing), and `#` may also follow an APDU.
///
/// The whole script is checked before anything is sent: a line that is not an APDU is an
/// error naming it, and the card sees nothing.
struct APDUScript: Sendable, Equatable {
    enum Step: Sendable, Equatable {
        /// Send this command; `line` is where the script has it (1-based).
        case send(CommandAPDU, line: Int)
        /// Reset the card (a warm reset on a reader; a virtual card or a trace starts anew).
        case reset(line: Int)
    }

    var steps: [Step]

    /// Why a script cannot be run: where, and what is wrong.
    struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        var place: String
        var reason: String
        var description: String { "\(place): \(reason)" }
    }

    /// Parses `lines`, where `place(n)` names line n in messages (`script.apdu line 3`,
    /// `argument 2`).
    static func parse(lines: [Substring], place: (Int) -> String) throws(Problem) -> APDUScript {
        var steps: [Step] = []
        var pending = ""        // a line continued with `\`
        var pendingStart = 0
        for (i, rawLine) in lines.enumerated() {
            let number = i + 1
            var line = rawLine.trimmingAny([" ", "\t", "\r"])
            if let hash = line.firstIndex(of: "#") { line = String(line[..<hash]).trimmingAny([" ", "\t"]) }
            // Empty lines and comments are skipped, inside a continued line too (as scriptor does).
            if line.isEmpty { continue }
            if pending.isEmpty {
                switch line.lowercased() {
                case "exit": return APDUScript(steps: steps)
                case "reset": steps.append(.reset(line: number)); continue
                default: break
                }
                pendingStart = number
            }
            if line.hasSuffix("\\") {
                pending += line.dropLast() + " "
                continue
            }
            let text = pending + line
            pending = ""
            let bytes: [UInt8]
            do {
                bytes = try Hex.decode(text)
            } catch {
                throw Problem(place: place(pendingStart), reason: "not an APDU in hex (\(error.reason))\(Self.echo(text))")
            }
            do {
                steps.append(.send(try CommandAPDU(bytes: bytes), line: pendingStart))
            } catch {
                throw Problem(place: place(pendingStart), reason: "not a command APDU: \(error.reason)")
            }
        }
        if !pending.isEmpty {
            throw Problem(place: place(pendingStart), reason: "the script ends inside a line continued with '\\'")
        }
        return APDUScript(steps: steps)
    }

    /// The bad line as the message shows it, `: '00A4zz'`, with any PAN in it masked by the one
    /// policy (``SensitiveData``): digits split by spaces are joined first, and a line that would
    /// still show 12 digits in a row (a PAN in ASCII hex) is not shown at all.
    static func echo(_ text: String) -> String {
        let compact = String(text.filter { !$0.isWhitespace })
        let masked = SensitiveData.maskedText(compact)
        if SensitiveData.mayShowPAN(masked) { return "" }
        return ": '\((masked == compact ? text : masked).prefix(40))'"
    }

    /// Parses a script's text; `name` names it in messages (`script.apdu line 3`).
    static func parse(text: String, name: String) throws(Problem) -> APDUScript {
        try parse(lines: text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline), place: { "\(name) line \($0)" })
    }
}

private extension StringProtocol {
    func trimmingAny(_ set: Set<Character>) -> String {
        var s = self[...]
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
