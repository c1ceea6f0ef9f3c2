import CardChannel
import ISO7816

/// Turns a log of pcsc-lite's `pcsc-spy` into an ``APDUTrace``: every `SCardTransmit` of the
/// spied program becomes an exchange, a failed one an event.
///
/// Two forms are read, told apart by their first line:
/// - the **raw log** that `libpcscspy` writes to the `~/pcsc-spy` FIFO (`cat ~/pcsc-spy > LOG`
///   while the program runs): lines `THREAD@>|sec|usec|SCardTransmit`, one line per argument,
///   `THREAD@<|sec|usec|SCardTransmit|text|0xRV`. It has wall-clock times: commands are timed
///   at the call, responses at its return, since the return of `SCardConnect`.
/// - the **printed output** of `pcsc-spy [-n] [-t] LOG` (colours allowed): `SCardTransmit`,
///   ` i bSendBuffer` + hex dump, ` o bRecvBuffer` + hex dump, ` => … (SCARD_… [0x…])  [0.043723]`.
///   It carries each call's duration only, so times are the sum of the durations of the calls
///   before (the idle time between calls is lost); `-d` output has no times at all.
///
/// A failed transmit becomes `card-removed` (`SCARD_W_REMOVED_CARD`), `reader-removed`
/// (`SCARD_E_READER_UNAVAILABLE`, `SCARD_E_UNKNOWN_READER`, `SCARD_E_NO_READERS_AVAILABLE`),
/// `timeout` (`SCARD_E_TIMEOUT`) or `transmit-error NAME`; a "successful" response shorter
/// than SW1 SW2 (vpcd's answer when a card closes its socket) becomes
/// `transmit-error malformedResponse`.
public enum PCSCSpyImporter {
    /// Imports a log; redacted unless `redact` is false.
    public static func importLog(_ text: String, name: String? = nil, redact: Bool = true) throws(TraceError) -> APDUTrace {
        var trace = try parse(text, path: name)
        if let name { trace.comments.insert("Imported from the pcsc-spy log \(Proxmark3Importer.baseName(name))", at: 0) }
        return redact ? trace.redacted() : trace
    }

    /// Parses either form (without redacting).
    public static func parse(_ text: String, path: String? = nil) throws(TraceError) -> APDUTrace {
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map { l -> Substring in
            l.hasSuffix("\r") ? l.dropLast() : l
        }
        guard let first = lines.first(where: { !$0.allSatisfy(\.isWhitespace) }) else {
            throw TraceError(.noExchanges, "the log is empty", path: path)
        }
        var calls: [Call]
        var raw = false
        var unfinished: [Int] = []
        if first.contains("@>|") || first.contains("@<|") {
            calls = try rawCalls(lines, path: path)
            raw = true
        } else {
            calls = try printedCalls(lines, path: path, unfinishedTransmits: &unfinished)
        }
        calls.sort { $0.order < $1.order }
        var trace = try trace(from: calls, timed: raw, path: path)
        // A log cut short (a copy interrupted, a disk full): the exchange it ends in is not in
        // the trace, and the user is told so rather than left with a trace that looks whole.
        for line in unfinished {
            trace.comments.append("the log ends inside the SCardTransmit on line \(line) (truncated log?): that exchange is not imported")
        }
        return trace
    }

    /// One finished PC/SC call.
    struct Call {
        var function: String
        /// Argument lines, in order (raw form) or `name value` pairs (printed form).
        var arguments: [String]
        var send: [UInt8]?
        var receive: [UInt8]?
        /// Whether the receive buffer was reported as NULL (not just empty).
        var start: Duration
        var end: Duration
        var rvName: String?
        var line: Int
        var order: Int
        var atr: [UInt8]?
        var reader: String?
    }

    // MARK: Raw log

    private static func rawCalls(_ lines: [Substring], path: String?) throws(TraceError) -> [Call] {
        var open: [Substring: (fn: String, start: Duration, args: [String], line: Int)] = [:]
        var out: [Call] = []
        for (k, line) in lines.enumerated() {
            let n = k + 1
            if line.isEmpty { continue }
            guard let at = line.firstIndex(of: "@") else {
                throw TraceError(.badCapture, "not a pcsc-spy raw log line (no THREAD@ prefix)", path: path, lineNumber: n)
            }
            let thread = line[..<at]
            let body = line[line.index(after: at)...]
            if body.hasPrefix(">|") {
                let f = body.split(separator: "|", omittingEmptySubsequences: false)
                guard f.count >= 4, let t = time(f[1], f[2]) else {
                    throw TraceError(.badCapture, "a call line is `>|sec|usec|function`", path: path, lineNumber: n)
                }
                open[thread] = (String(f[3]), t, [], n)
            } else if body.hasPrefix("<|") {
                let f = body.split(separator: "|", omittingEmptySubsequences: false)
                guard f.count >= 6, let t = time(f[1], f[2]) else {
                    throw TraceError(.badCapture, "a return line is `<|sec|usec|function|text|0xRV`", path: path, lineNumber: n)
                }
                guard let o = open.removeValue(forKey: thread) else { continue }   // log started mid-call
                guard String(f[3]) == o.fn else {
                    throw TraceError(.badCapture, "\(f[3]) returns while \(o.fn) (line \(o.line)) is open", path: path, lineNumber: n)
                }
                guard let rv = UInt32(f[5].dropFirst(2), radix: 16), f[5].hasPrefix("0x") else {
                    throw TraceError(.badCapture, "return value `\(f[5].prefix(20))` is not 0x… hex", path: path, lineNumber: n)
                }
                var call = Call(function: o.fn, arguments: o.args, start: o.start, end: t,
                                rvName: rv == 0 ? nil : rvName(rv), line: o.line, order: o.line)
                switch o.fn {
                case "SCardTransmit":
                    // hCard, pioSendPci (protocol, length), bSendLength, bSendBuffer,
                    // pioRecvPci (protocol, length), bRecvLength, bRecvBuffer.
                    guard o.args.count >= 9 else {
                        throw TraceError(.badCapture, "SCardTransmit with \(o.args.count) argument line(s), 9 expected",
                                         path: path, lineNumber: o.line)
                    }
                    call.send = try buffer(o.args[4], length: o.args[3], path: path, line: o.line)
                    call.receive = try buffer(o.args[8], length: rv == 0 ? o.args[7] : nil, path: path, line: o.line)
                case "SCardConnect":
                    if o.args.count >= 2 { call.reader = o.args[1] }
                case "SCardStatus":
                    // hCard, pcchReaderLen, pcbAtrLen, cchReaderLen, mszReaderName, dwState,
                    // dwProtocol, bAtrLen, bAtr.
                    if o.args.count >= 9, let atr = try? Hex.decode(o.args[8]), !atr.isEmpty { call.atr = atr }
                    if o.args.count >= 5, o.args[4] != "NULL", !o.args[4].isEmpty { call.reader = o.args[4] }
                default:
                    break
                }
                out.append(call)
            } else if open[thread] != nil {
                open[thread]!.args.append(String(body).trimmingSpaces)
            }
        }
        return out
    }

    private static func time(_ sec: Substring, _ usec: Substring) -> Duration? {
        guard let s = Int64(sec), let u = Int64(usec), s >= 0, (0..<1_000_000).contains(u) else { return nil }
        return .seconds(s) + .microseconds(u)
    }

    /// A raw hex buffer line: `NULL`, empty, or `00 A4 …`; checked against the length line.
    private static func buffer(_ s: String, length: String?, path: String?, line: Int) throws(TraceError) -> [UInt8]? {
        if s == "NULL" { return nil }
        let bytes: [UInt8]
        do {
            bytes = try Hex.decode(s)
        } catch {
            throw TraceError(.badCapture, "SCardTransmit buffer is not hex: \(error.reason)", path: path, lineNumber: line)
        }
        if let length, length.hasPrefix("0x"), let n = Int(length.dropFirst(2), radix: 16), n != bytes.count {
            throw TraceError(.badCapture, "SCardTransmit buffer of \(bytes.count) byte(s) where its length says \(n)",
                             path: path, lineNumber: line)
        }
        return bytes
    }

    // MARK: Printed output

    private static func printedCalls(_ lines: [Substring], path: String?,
                                     unfinishedTransmits: inout [Int]) throws(TraceError) -> [Call] {
        struct Open {
            var fn: String
            var line: Int
            var args: [String] = []
            var send: [UInt8]? = nil
            var receive: [UInt8]? = nil
            var filling: Int = 0   // 1 send, 2 receive
            var reader: String? = nil
            var atr: [UInt8]? = nil
        }
        var open: [String: Open] = [:]
        var clock: Duration = .zero
        var out: [Call] = []
        var sawFunction = false
        for (k, rawLine) in lines.enumerated() {
            let n = k + 1
            var line = stripANSI(rawLine)
            // Per-thread indentation and the optional `(tN)` marker of `-t`.
            var thread = ""
            var trimmed = line.drop { $0 == " " }
            if trimmed.hasPrefix("(t"), let close = trimmed.firstIndex(of: ")") {
                thread = String(trimmed[..<close])
                trimmed = trimmed[trimmed.index(after: close)...]
                line = String(trimmed)
            } else {
                thread = String(repeating: " ", count: (line.count - trimmed.count) / 4)
            }
            let t = trimmed.drop { $0 == " " }
            if t.isEmpty { continue }
            if t.hasPrefix("SCar"), t.allSatisfy({ $0.isLetter || $0.isNumber }) {
                open[thread] = Open(fn: t == "SCarControl" ? "SCardControl" : String(t), line: n)
                sawFunction = true
                continue
            }
            // The open call is taken out of the table while this line updates it and put back
            // after: a copy left in the table would make every append copy the whole call (its
            // arguments, its buffers), quadratic in the lines of one call.
            guard var o = open.removeValue(forKey: thread) else {
                if !sawFunction && !t.hasPrefix("Thread") && !t.hasPrefix("Results") && !t.hasPrefix("total") {
                    throw TraceError(.badCapture,
                                     "not a pcsc-spy log: expected a raw log (`THREAD@>|…`) or pcsc-spy's printed output (`SCardTransmit`, ` i …`)",
                                     path: path, lineNumber: n)
                }
                continue
            }
            if t.hasPrefix("=>") {
                // ` => Command successful. (SCARD_S_SUCCESS [0x00000000])  [0.043723]`: the code in
                // brackets says success or failure when it is readable, else the name does.
                var rvName: String?
                if let open = t.firstIndex(of: "(") {
                    let inside = t[t.index(after: open)..<(t[open...].firstIndex(of: ")") ?? t.endIndex)]
                    let bracket = inside.lastIndex(of: "[") ?? inside.endIndex
                    let name = inside[..<bracket].trimmingSpaces
                    let hex = inside[bracket...].dropFirst().prefix { $0 != "]" }
                    if hex.hasPrefix("0x"), let rv = UInt32(hex.dropFirst(2), radix: 16) {
                        if rv != 0 { rvName = name.isEmpty ? Self.rvName(rv) : name }
                    } else if name != "SCARD_S_SUCCESS" {
                        rvName = name
                    }
                }
                var duration: Duration = .zero
                if let lb = t.lastIndex(of: "["), t.hasSuffix("]") {
                    let inside = t[t.index(after: lb)..<t.index(before: t.endIndex)]
                    let parts = inside.split(separator: ".")
                    // Whole seconds as a trace holds them (10 digits), so their sum cannot overflow.
                    if parts.count == 2, parts[0].count <= 10, let s = Int64(parts[0]), s >= 0,
                       let u = Int64(parts[1]), parts[1].count == 6, u >= 0 {
                        duration = .seconds(s) + .microseconds(u)
                    }
                }
                out.append(Call(function: o.fn, arguments: o.args, send: o.send, receive: o.receive,
                                start: clock, end: clock + duration, rvName: rvName, line: o.line, order: o.line,
                                atr: o.atr, reader: o.reader))
                clock += duration
                continue
            }
            guard t.hasPrefix("i ") || t.hasPrefix("o ") else { open[thread] = o; continue }
            let content = t.dropFirst(2)
            if content.hasPrefix(" ") {
                // A hex dump row ` 0000 00 A4 04 … ascii`, or ` NULL`.
                let row = content.dropFirst()
                if row == "NULL" { o.filling = 0; open[thread] = o; continue }
                guard o.filling != 0 else { open[thread] = o; continue }
                let chars = Array(row)
                guard chars.count >= 7, chars[4] == " " else {
                    throw TraceError(.badCapture, "a hex dump row is `OFFS HH HH …`", path: path, lineNumber: n)
                }
                let hexPart = String(chars[5..<min(chars.count, 5 + 47)])
                let bytes: [UInt8]
                do {
                    bytes = try Hex.decode(hexPart.trimmingSpaces)
                } catch {
                    throw TraceError(.badCapture, "a hex dump row that is not hex: \(error.reason)", path: path, lineNumber: n)
                }
                if o.filling == 1 { o.send = o.send ?? []; o.send!.append(contentsOf: bytes) }
                else { o.receive = o.receive ?? []; o.receive!.append(contentsOf: bytes) }
                open[thread] = o
                continue
            }
            o.filling = 0
            if content == "bSendBuffer" { o.filling = 1; o.send = [] }
            else if content == "bRecvBuffer" { o.filling = 2; o.receive = [] }
            else if content.hasPrefix("szReader ") { o.reader = String(content.dropFirst("szReader ".count)) }
            else if content.hasPrefix("bAtr "), let atr = try? Hex.decode(content.dropFirst(5)), !atr.isEmpty { o.atr = atr }
            o.args.append(String(content))
            open[thread] = o
        }
        unfinishedTransmits = open.values.filter { $0.fn == "SCardTransmit" }.map(\.line).sorted()
        return out
    }

    private static func stripANSI(_ s: Substring) -> String {
        var out = ""
        var i = s.startIndex
        while i < s.endIndex {
            if s[i] == "\u{1B}" {
                var j = s.index(after: i)
                if j < s.endIndex, s[j] == "[" {
                    j = s.index(after: j)
                    while j < s.endIndex, !(s[j].isLetter) { j = s.index(after: j) }
                    if j < s.endIndex { j = s.index(after: j) }
                }
                i = j
                continue
            }
            out.append(s[i])
            i = s.index(after: i)
        }
        return out
    }

    // MARK: Calls to a trace

    private static func trace(from calls: [Call], timed: Bool, path: String?) throws(TraceError) -> APDUTrace {
        var trace = APDUTrace()
        var origin: Duration?
        var reader: String?
        var atr: [UInt8]?
        var notes: [String] = []
        var last: Duration = .zero
        for c in calls {
            switch c.function {
            case "SCardConnect" where c.rvName == nil:
                if origin == nil { origin = c.end }
                if reader == nil { reader = c.reader }
            case "SCardStatus" where c.rvName == nil:
                if atr == nil { atr = c.atr }
                if reader == nil { reader = c.reader }
            case "SCardTransmit":
                guard let send = c.send, !send.isEmpty else {
                    notes.append("the SCardTransmit on line \(c.line) has no command buffer: skipped")
                    continue
                }
                guard (try? CommandAPDU(bytes: send)) != nil else {
                    notes.append("the SCardTransmit on line \(c.line) sends \(send.count) byte(s) that are not a command APDU: skipped")
                    continue
                }
                let o = origin ?? c.start
                origin = o
                let start = max(last, c.start - o)
                let end = max(start, c.end - o)
                last = end
                trace.entries.append(.init(time: start, kind: .command(send)))
                if let rv = c.rvName {
                    trace.entries.append(.init(time: end, kind: .event(event(for: rv))))
                } else if let r = c.receive, let response = try? ResponseAPDU(bytes: r) {
                    trace.entries.append(.init(time: end, kind: .response(response)))
                } else {
                    trace.entries.append(.init(time: end, kind: .event(.transmitError(CardChannelError.Code.malformedResponse.name))))
                }
            default:
                break
            }
        }
        guard !trace.entries.isEmpty else {
            throw TraceError(.noExchanges, "no SCardTransmit in the log", path: path)
        }
        trace.headers.append(.init("title", "pcsc-spy capture\(path.map { " \(Proxmark3Importer.baseName($0))" } ?? "")"))
        trace.headers.append(.init("source", "pcsc-spy"))
        if let reader { trace.reader = reader }
        if let atr { trace.atr = atr }
        if !timed {
            notes.append("times are sums of SCardTransmit durations from pcsc-spy's printed output (idle time between calls is lost)")
        }
        trace.comments += notes
        return trace
    }

    static func event(for rv: String) -> TraceEvent {
        switch rv {
        case "SCARD_W_REMOVED_CARD": return TraceEvent(.cardRemoved, detail: rv)
        case "SCARD_E_READER_UNAVAILABLE", "SCARD_E_UNKNOWN_READER", "SCARD_E_NO_READERS_AVAILABLE":
            return TraceEvent(.readerRemoved, detail: rv)
        case "SCARD_E_TIMEOUT": return TraceEvent(.timeout, detail: rv)
        default: return .transmitError(rv)
        }
    }

    /// pcsc-lite's names for its return codes (as pcsc-spy prints them).
    static func rvName(_ rv: UInt32) -> String {
        let names: [UInt32: String] = [
            0x8010_0001: "SCARD_F_INTERNAL_ERROR", 0x8010_0002: "SCARD_E_CANCELLED",
            0x8010_0003: "SCARD_E_INVALID_HANDLE", 0x8010_0004: "SCARD_E_INVALID_PARAMETER",
            0x8010_0005: "SCARD_E_INVALID_TARGET", 0x8010_0006: "SCARD_E_NO_MEMORY",
            0x8010_0007: "SCARD_F_WAITED_TOO_LONG", 0x8010_0008: "SCARD_E_INSUFFICIENT_BUFFER",
            0x8010_0009: "SCARD_E_UNKNOWN_READER", 0x8010_000A: "SCARD_E_TIMEOUT",
            0x8010_000B: "SCARD_E_SHARING_VIOLATION", 0x8010_000C: "SCARD_E_NO_SMARTCARD",
            0x8010_000D: "SCARD_E_UNKNOWN_CARD", 0x8010_000E: "SCARD_E_CANT_DISPOSE",
            0x8010_000F: "SCARD_E_PROTO_MISMATCH", 0x8010_0010: "SCARD_E_NOT_READY",
            0x8010_0011: "SCARD_E_INVALID_VALUE", 0x8010_0012: "SCARD_E_SYSTEM_CANCELLED",
            0x8010_0013: "SCARD_F_COMM_ERROR", 0x8010_0014: "SCARD_F_UNKNOWN_ERROR",
            0x8010_0015: "SCARD_E_INVALID_ATR", 0x8010_0016: "SCARD_E_NOT_TRANSACTED",
            0x8010_0017: "SCARD_E_READER_UNAVAILABLE", 0x8010_0018: "SCARD_P_SHUTDOWN",
            0x8010_0019: "SCARD_E_PCI_TOO_SMALL", 0x8010_001A: "SCARD_E_READER_UNSUPPORTED",
            0x8010_001B: "SCARD_E_DUPLICATE_READER", 0x8010_001C: "SCARD_E_CARD_UNSUPPORTED",
            0x8010_001D: "SCARD_E_NO_SERVICE", 0x8010_001E: "SCARD_E_SERVICE_STOPPED",
            0x8010_001F: "SCARD_E_UNSUPPORTED_FEATURE", 0x8010_002E: "SCARD_E_NO_READERS_AVAILABLE",
            0x8010_002F: "SCARD_E_COMM_DATA_LOST", 0x8010_0065: "SCARD_W_UNSUPPORTED_CARD",
            0x8010_0066: "SCARD_W_UNRESPONSIVE_CARD", 0x8010_0067: "SCARD_W_UNPOWERED_CARD",
            0x8010_0068: "SCARD_W_RESET_CARD", 0x8010_0069: "SCARD_W_REMOVED_CARD",
        ]
        if let n = names[rv] { return n }
        let hex = String(rv, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: max(0, 8 - hex.count)) + hex
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
