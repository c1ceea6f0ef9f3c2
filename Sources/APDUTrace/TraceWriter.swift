import ISO7816

extension APDUTrace {
    /// The trace as `tapemu-apdu-trace/1` text: comments, `@format`, headers, entries; one
    /// line each, ending with a newline. ``init(parsing:path:)`` reads it back to an equal value.
    public var text: String {
        var out = ""
        for c in comments {
            out += "# " + Self.oneLine(c) + "\n"
        }
        out += "@format \(Self.format)\n"
        for h in headers where h.key != "format" {
            let value = Self.oneLine(h.value)
            out += value.isEmpty ? "@\(h.key)\n" : "@\(h.key) \(value)\n"
        }
        for e in entries {
            out += Self.formatTime(e.time)
            switch e.kind {
            case .command(let bytes): out += " > " + Hex.encode(bytes)
            case .response(let r): out += " < " + Hex.encode(r.bytes)
            case .event(let ev): out += " ! " + Self.oneLine(ev.description)
            }
            out += "\n"
        }
        return out
    }

    /// Writes ``text`` to `path` (atomically).
    public func write(toFile path: String) throws(TraceError) {
        try TraceFile.write(Array(text.utf8), to: path)
    }

    /// Seconds with 6 decimals (9 when the time has sub-microsecond parts); a time outside
    /// ``timeRange`` is written as its nearest end (negative times as 0).
    public static func formatTime(_ d: Duration) -> String {
        let (s, atto) = min(max(d, timeRange.lowerBound), timeRange.upperBound).components
        guard s >= 0, atto >= 0 else { return "0.000000" }
        let nanos = atto / 1_000_000_000
        let (digits, value) = nanos % 1000 == 0 ? (6, nanos / 1000) : (9, nanos)
        var frac = String(value)
        if frac.count < digits { frac = String(repeating: "0", count: digits - frac.count) + frac }
        return "\(s).\(frac)"
    }

    private static func oneLine(_ s: String) -> String { breaksAsSpaces(s) }
}
