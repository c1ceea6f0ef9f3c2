import ISO7816
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

extension APDUTrace {
    /// Parses a trace. Every problem is a ``TraceError`` naming `path` (when given) and the line.
    public init(parsing text: String, path: String? = nil) throws(TraceError) {
        var parser = TraceParser(path: path)
        self = try parser.parse(text)
    }

    /// Parses a trace from UTF-8 bytes.
    public init(parsing bytes: [UInt8], path: String? = nil) throws(TraceError) {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw TraceError(.notUTF8, "the file is not UTF-8 text", path: path)
        }
        try self.init(parsing: text, path: path)
    }

    /// Reads and parses the trace at `path`.
    public init(contentsOfFile path: String) throws(TraceError) {
        try self.init(parsing: try TraceFile.read(path), path: path)
    }

    /// Parses a `<seconds>[.<fraction>]` timestamp (up to 10 digits and 9 decimals: within
    /// ``timeRange``), or nil.
    public static func parseTime(_ s: some StringProtocol) -> Duration? {
        let parts = s.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.count <= 10,
              whole.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let seconds = Int64(whole) else { return nil }
        var nanos: Int64 = 0
        if parts.count == 2 {
            let frac = parts[1]
            guard !frac.isEmpty, frac.count <= 9, frac.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  let f = Int64(frac) else { return nil }
            var scale: Int64 = 1
            for _ in 0..<(9 - frac.count) { scale *= 10 }
            nanos = f * scale
        }
        return Duration(secondsComponent: seconds, attosecondsComponent: nanos * 1_000_000_000)
    }
}

/// Reading and writing trace files (UTF-8 text).
enum TraceFile {
    static func read(_ path: String) throws(TraceError) -> [UInt8] {
        // A device or a FIFO (`/dev/null`, `/dev/zero`) is not a trace file, whatever it holds.
        if let type = try? FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType,
           type != .typeRegular, type != .typeSymbolicLink, type != .typeDirectory {
            throw TraceError(.unreadable, "cannot read the file (not a regular file: a device, a FIFO or a socket)", path: path)
        }
        do {
            return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw TraceError(.unreadable, "cannot read the file (\(Self.reason(error)))", path: path)
        }
    }

    static func write(_ bytes: [UInt8], to path: String) throws(TraceError) {
        do {
            try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw TraceError(.unreadable, "cannot write the file (\(Self.reason(error)))", path: path)
        }
    }

    private static func reason(_ error: any Error) -> String {
        if let e = error as? CocoaError {
            switch e.code {
            case .fileReadNoSuchFile, .fileNoSuchFile: return "no such file"
            case .fileReadNoPermission, .fileWriteNoPermission: return "permission denied"
            default: break
            }
        }
        // Else what the system call said ("Is a directory"), not Foundation's nested NSError dump.
        if let e = error as? CocoaError, let posix = e.underlying as? POSIXError {
            return String(cString: strerror(posix.code.rawValue))
        }
        return "\(error)"
    }
}

/// The line parser: one pass, headers first, every command answered by a response or an event.
struct TraceParser {
    let path: String?
    private var sawFormat = false
    private var sawEntry = false
    private var lastTime: Duration = .zero
    private var pendingCommandLine: Int?
    private var trace = APDUTrace()

    init(path: String?) { self.path = path }

    private func fail(_ code: TraceError.Code, _ reason: String, _ line: Int) -> TraceError {
        TraceError(code, reason, path: path, lineNumber: line)
    }

    mutating func parse(_ text: String) throws(TraceError) -> APDUTrace {
        // A byte order mark some editors put first is not part of the first line.
        let text = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
        var number = 0
        // Lines end with LF, CRLF or a lone CR: a value never holds a line break, so what the
        // writer puts on one line (it turns each break into a space) reads back as it was.
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            number += 1
            try parseLine(line, number)
        }
        guard sawFormat else {
            throw TraceError(.missingFormat, "no @format line: not a \(APDUTrace.format) trace (empty file?)",
                             path: path, lineNumber: number > 0 ? 1 : nil)
        }
        if let l = pendingCommandLine {
            throw fail(.commandWithoutResponse, "the command on line \(l) has no response or event (truncated trace?)", l)
        }
        return trace
    }

    private mutating func parseLine(_ line: Substring, _ n: Int) throws(TraceError) {
        let trimmed = line.drop { $0 == " " || $0 == "\t" }
        guard let first = trimmed.first else { return }
        if first == "#" {
            if !sawFormat {
                var c = trimmed.dropFirst()
                if c.first == " " { c = c.dropFirst() }
                trace.comments.append(String(c))
            }
            return
        }
        if first == "@" {
            try parseHeader(trimmed.dropFirst(), n)
            return
        }
        guard sawFormat else {
            throw fail(.missingFormat, "the first line that is not a comment must be `@format \(APDUTrace.format)`", n)
        }
        try parseEntry(trimmed, n)
    }

    private mutating func parseHeader(_ body: Substring, _ n: Int) throws(TraceError) {
        let key = body.prefix { $0 != " " && $0 != "\t" }
        var value = body.dropFirst(key.count)
        value = value.drop { $0 == " " || $0 == "\t" }
        while let l = value.last, l == " " || l == "\t" { value = value.dropLast() }
        guard !key.isEmpty, key.utf8.allSatisfy({ Self.isKeyByte($0) }) else {
            throw fail(.badHeader, "a header key is letters, digits, `-`, `_` and `.`: `@\(key.prefix(40))`", n)
        }
        if key == "format" {
            guard !sawFormat else { throw fail(.badHeader, "a second @format line", n) }
            guard !sawEntry, trace.headers.isEmpty else {
                throw fail(.missingFormat, "@format must be the first line that is not a comment", n)
            }
            let expected = APDUTrace.format
            if value == expected {
                sawFormat = true
                return
            }
            if value.hasPrefix("tapemu-apdu-trace/") {
                throw fail(.unknownFormatVersion,
                           "unknown format version `\(value.prefix(40))`: this build reads \(expected)", n)
            }
            throw fail(.notATrace, "@format is `\(value.prefix(40))`, not \(expected)", n)
        }
        guard sawFormat else {
            throw fail(.missingFormat, "the first line that is not a comment must be `@format \(APDUTrace.format)`", n)
        }
        guard !sawEntry else {
            throw fail(.headerAfterExchange, "header @\(key) after the first exchange: headers come first", n)
        }
        trace.headers.append(APDUTrace.Header(String(key), String(value)))
    }

    private static func isKeyByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }

    private mutating func parseEntry(_ line: Substring, _ n: Int) throws(TraceError) {
        let timeText = line.prefix { $0 != " " && $0 != "\t" }
        let rest = line.dropFirst(timeText.count).drop { $0 == " " || $0 == "\t" }
        guard let time = APDUTrace.parseTime(timeText) else {
            if timeText.first.map({ $0.isNumber }) == true {
                throw fail(.badTimestamp, "bad timestamp `\(timeText.prefix(30))`: seconds since connect, e.g. 0.007731 (at most 9 decimals)", n)
            }
            throw fail(.badLine, "not a comment, a header or a timed entry: `\(line.prefix(40))`", n)
        }
        guard time >= lastTime else {
            throw fail(.timeGoesBackwards,
                       "timestamp \(timeText) is earlier than the line before (\(APDUTrace.formatTime(lastTime)))", n)
        }
        guard let marker = rest.first else {
            throw fail(.badLine, "a timestamp with nothing after it: expected `>`, `<` or `!`", n)
        }
        let body = rest.dropFirst()
        guard body.isEmpty || body.first == " " || body.first == "\t" else {
            throw fail(.badLine, "expected `>`, `<` or `!` followed by a space after the timestamp", n)
        }
        let payload = body.drop { $0 == " " || $0 == "\t" }
        let kind: APDUTrace.Entry.Kind
        switch marker {
        case ">":
            if let l = pendingCommandLine {
                throw fail(.commandWithoutResponse,
                           "a command while the command on line \(l) has no response or event yet", n)
            }
            let bytes = try hex(payload, n, what: "command")
            do {
                _ = try CommandAPDU(bytes: bytes)
            } catch {
                throw fail(.badCommand, "not a command APDU: \(error.reason)", n)
            }
            kind = .command(bytes)
            pendingCommandLine = n
        case "<":
            guard pendingCommandLine != nil else {
                throw fail(.responseWithoutCommand, "a response without a command before it", n)
            }
            let bytes = try hex(payload, n, what: "response")
            guard let response = try? ResponseAPDU(bytes: bytes) else {
                throw fail(.badResponse, "a response of \(bytes.count) byte(s): it needs at least SW1 SW2", n)
            }
            kind = .response(response)
            pendingCommandLine = nil
        case "!":
            let name = payload.prefix { $0 != " " && $0 != "\t" }
            var detail = payload.dropFirst(name.count).drop { $0 == " " || $0 == "\t" }
            while let l = detail.last, l == " " || l == "\t" { detail = detail.dropLast() }
            guard let k = TraceEvent.Kind(rawValue: String(name)) else {
                let known = TraceEvent.Kind.allCases.map(\.rawValue).joined(separator: ", ")
                throw fail(.unknownEvent, "unknown event `\(name.prefix(40))` (known: \(known))", n)
            }
            if k == .transmitError && detail.isEmpty {
                throw fail(.unknownEvent, "transmit-error needs the error's name, e.g. `transmit-error SCARD_E_NOT_TRANSACTED`", n)
            }
            kind = .event(TraceEvent(k, detail: detail.isEmpty ? nil : String(detail)))
            pendingCommandLine = nil
        default:
            throw fail(.badLine, "expected `>` (command), `<` (response) or `!` (event) after the timestamp, found `\(marker)`", n)
        }
        sawEntry = true
        lastTime = time
        trace.entries.append(APDUTrace.Entry(time: time, kind: kind, sourceLine: n))
    }

    private func hex(_ s: Substring, _ n: Int, what: String) throws(TraceError) -> [UInt8] {
        let bytes: [UInt8]
        do {
            bytes = try Hex.decode(s)
        } catch {
            throw fail(.badHex, "bad hex in the \(what): \(error.reason)", n)
        }
        guard !bytes.isEmpty else { throw fail(.badHex, "an empty \(what)", n) }
        return bytes
    }
}
