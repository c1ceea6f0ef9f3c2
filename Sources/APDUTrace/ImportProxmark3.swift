import ISO7816

/// Turns a Proxmark3 tracelog (an ISO 14443-A sniff between a terminal and a card) into an
/// ``APDUTrace``.
///
/// The tracelog is a sequence of records: `u32` timestamp and `u16` duration in carrier cycles
/// (1/13.56 MHz, little-endian), `u16` data length with the top bit set for frames from the
/// card, the raw frame, then one parity bit per byte. The importer skips polling and activation
/// (REQA/WUPA, anticollision, SELECT, HLTA, RATS/ATS, PPS, Apple ECP frames), checks and strips
/// the CRC-A, strips the ISO-DEP PCB (and CID/NAD), reassembles chained I-blocks, drops R-blocks
/// and S(WTX) — the waiting time stays in the card's time, from the command's first frame to the
/// response's last — and keeps timestamps (seconds since the ATS, or since the first APDU).
/// A response the sniffer lost (a frame with a bad CRC and no good retransmission) is recorded
/// as `! transmit-error SCARD_E_COMM_DATA_LOST`, with a comment saying so. The trace says
/// `@match structural`: a sniffed terminal's data (TTQ, amount, country) are not ours.
public enum Proxmark3Importer {
    /// One frame of the tracelog.
    public struct Frame: Hashable, Sendable {
        /// Start of the frame, in carrier cycles.
        public var timestamp: UInt32
        /// Length of the frame on air, in carrier cycles (0 when the tracer did not know).
        public var duration: UInt16
        public var fromCard: Bool
        /// The frame as sniffed: ISO-DEP PCB, payload, CRC-A (when it has one).
        public var data: [UInt8]

        public init(timestamp: UInt32, duration: UInt16, fromCard: Bool, data: [UInt8]) {
            self.timestamp = timestamp
            self.duration = duration
            self.fromCard = fromCard
            self.data = data
        }
    }

    /// The carrier frequency: timestamps count its cycles.
    public static let carrierHz: Int64 = 13_560_000

    /// Imports a tracelog; redacted unless `redact` is false.
    public static func importTrace(_ bytes: [UInt8], name: String? = nil, redact: Bool = true) throws(TraceError) -> APDUTrace {
        let frames = try frames(bytes, path: name)
        var trace = try trace(from: frames, path: name)
        if let name { trace.comments.insert("Imported from the Proxmark3 tracelog \(name)", at: 0) }
        return redact ? trace.redacted() : trace
    }

    /// Reads the records of a tracelog.
    public static func frames(_ bytes: [UInt8], path: String? = nil) throws(TraceError) -> [Frame] {
        var out: [Frame] = []
        var i = 0
        while i < bytes.count {
            guard i + 8 <= bytes.count else {
                throw TraceError(.badCapture, "a record header cut short at byte \(i) (\(bytes.count - i) of 8 bytes)", path: path)
            }
            let ts = UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24
            let duration = UInt16(bytes[i + 4]) | UInt16(bytes[i + 5]) << 8
            let lenField = UInt16(bytes[i + 6]) | UInt16(bytes[i + 7]) << 8
            let length = Int(lenField & 0x7FFF)
            let parity = (length + 7) / 8
            guard length > 0 else {
                throw TraceError(.badCapture, "an empty frame in the record at byte \(i)", path: path)
            }
            guard i + 8 + length + parity <= bytes.count else {
                throw TraceError(.badCapture,
                                 "the record at byte \(i) announces \(length) byte(s) of frame and \(parity) of parity but the file ends first",
                                 path: path)
            }
            out.append(Frame(timestamp: ts, duration: duration, fromCard: lenField & 0x8000 != 0,
                             data: Array(bytes[(i + 8)..<(i + 8 + length)])))
            i += 8 + length + parity
        }
        guard !out.isEmpty else { throw TraceError(.noExchanges, "the tracelog holds no frame", path: path) }
        return out
    }

    /// CRC-A of ISO/IEC 14443-3 (initial value 6363, reflected), low byte first.
    public static func crcA(_ bytes: some Sequence<UInt8>) -> (UInt8, UInt8) {
        var crc: UInt16 = 0x6363
        for byte in bytes {
            var b = byte ^ UInt8(crc & 0xFF)
            b ^= b << 4
            crc = (crc >> 8) ^ (UInt16(b) << 8) ^ (UInt16(b) << 3) ^ (UInt16(b) >> 4)
        }
        return (UInt8(crc & 0xFF), UInt8(crc >> 8))
    }

    static func hasValidCRC(_ f: [UInt8]) -> Bool {
        guard f.count >= 3 else { return false }
        let (lo, hi) = crcA(f.dropLast(2))
        return f[f.count - 2] == lo && f[f.count - 1] == hi
    }

    /// An ISO-DEP block, CRC stripped.
    enum Block {
        case i(chaining: Bool, payload: [UInt8])
        case r(nak: Bool)
        case sWTX
        case sDeselect
    }

    static func block(_ frame: [UInt8]) -> Block? {
        guard let pcb = frame.first else { return nil }
        var header = 1
        if pcb & 0x08 != 0 { header += 1 }                 // CID
        if pcb & 0xE2 == 0x02 {                            // I-block
            if pcb & 0x04 != 0 { header += 1 }             // NAD
            guard frame.count >= header else { return nil }
            return .i(chaining: pcb & 0x10 != 0, payload: Array(frame[header...]))
        }
        if pcb & 0xE6 == 0xA2 { return .r(nak: pcb & 0x10 != 0) }
        if pcb & 0xC7 == 0xC2 { return pcb & 0x30 == 0x30 ? .sWTX : .sDeselect }
        return nil
    }

    /// Builds the trace from frames (exposed for tests on synthetic frame lists).
    public static func trace(from frames: [Frame], path: String? = nil) throws(TraceError) -> APDUTrace {
        var trace = APDUTrace()
        var notes: [String] = []

        // Absolute times in cycles, unwrapping the 32-bit counter (it wraps after ~317 s).
        var times: [Int64] = []
        var high: Int64 = 0
        var last: UInt32?
        for f in frames {
            if let l = last, f.timestamp < l, l - f.timestamp > 0x8000_0000 { high += 1 << 32 }
            last = f.timestamp
            times.append(high + Int64(f.timestamp))
        }
        func end(_ k: Int) -> Int64 {
            let f = frames[k]
            let onAir = f.duration > 0 ? Int64(f.duration) : Int64(f.data.count) * 1152   // 9 bits × 128 cycles
            return times[k] + onAir
        }

        enum Phase { case activation, awaitingATS, isoDEP }
        var phase = Phase.activation
        var origin: Int64?
        var ats: [UInt8]?
        var command: (bytes: [UInt8], start: Int64, done: Bool)?
        var response: [UInt8] = []
        var responseLost = false
        var skipped = 0
        // A trace's times never go backwards; a capture's clock may (a corrupt timestamp, a frame
        // whose duration runs past the next one): such a time is taken as the one before it.
        var lastTime: Duration = .zero
        // The exchanges so far, counted here: trace.exchanges builds them all, and the notes
        // below name one each time a command goes unanswered (quadratic in such commands).
        var exchangeCount = 0

        func finishExchange(_ event: TraceEvent?, at t: Int64) {
            guard let c = command, c.done else { command = nil; return }
            defer {
                command = nil
                response = []
                responseLost = false
            }
            // A trace holds command APDUs only (as the pcsc-spy importer, skip anything else).
            guard (try? CommandAPDU(bytes: c.bytes)) != nil else {
                notes.append("the terminal sent \(c.bytes.count) byte(s) that are not a command APDU: skipped with their answer")
                return
            }
            let o = origin ?? c.start
            origin = o
            let commandTime = max(lastTime, seconds(c.start - o))
            let replyTime = max(commandTime, seconds(max(t, c.start) - o))
            lastTime = replyTime
            trace.entries.append(.init(time: commandTime, kind: .command(c.bytes)))
            exchangeCount += 1
            if let event {
                trace.entries.append(.init(time: replyTime, kind: .event(event)))
            } else if let r = try? ResponseAPDU(bytes: response) {
                trace.entries.append(.init(time: replyTime, kind: .response(r)))
            } else {
                trace.entries.append(.init(time: replyTime, kind: .event(.transmitError("SCARD_E_COMM_DATA_LOST"))))
            }
        }

        for (k, f) in frames.enumerated() {
            let d = f.data
            // Polling restarts activation wherever it appears (7-bit REQA 26 / WUPA 52, HLTA 50 00).
            if !f.fromCard && d.count == 1 && (d[0] == 0x26 || d[0] == 0x52) {
                if command != nil {
                    notes.append("the terminal polled again before exchange \(exchangeCount + 1) was answered")
                    finishExchange(.cardRemoved, at: times[k])
                }
                phase = .activation
                continue
            }
            switch phase {
            case .activation:
                if !f.fromCard && hasValidCRC(d) && d.count == 4 && d[0] == 0xE0 {
                    phase = .awaitingATS                     // RATS
                }
                continue
            case .awaitingATS:
                if f.fromCard && hasValidCRC(d) {
                    ats = Array(d.dropLast(2))
                    if origin == nil { origin = end(k) }
                    phase = .isoDEP
                }
                continue
            case .isoDEP:
                break
            }
            // PPS after ATS.
            if !f.fromCard && hasValidCRC(d) && d.first.map({ $0 & 0xF0 == 0xD0 }) == true && d.count == 5 { continue }
            guard hasValidCRC(d), let b = block(Array(d.dropLast(2))) else {
                // Noise, or a frame the sniffer got wrong. A corrupt frame from the card while a
                // response is due means that response may be lost unless it is sent again.
                if f.fromCard, d.count > 3, let c = command, c.done { responseLost = true }
                skipped += 1
                continue
            }
            switch b {
            case .i(let chaining, let payload):
                if !f.fromCard {
                    if let c = command, c.done {
                        // A new command while the previous one is unanswered: its answer was lost.
                        notes.append("exchange \(exchangeCount + 1): the card's response was lost in the capture")
                        finishExchange(.transmitError("SCARD_E_COMM_DATA_LOST"), at: times[k])
                    }
                    if command == nil { command = ([], times[k], false) }
                    command!.bytes += payload
                    if !chaining { command!.done = true }
                } else if let c = command, c.done {
                    response += payload
                    responseLost = false
                    if !chaining { finishExchange(nil, at: end(k)) }
                }
            case .r, .sWTX:
                continue
            case .sDeselect:
                if command != nil { finishExchange(.cardRemoved, at: times[k]) }
                phase = .activation
            }
        }
        if let c = command, c.done {
            notes.append("exchange \(exchangeCount + 1): the capture ends before the card's response"
                         + (responseLost ? " (its frames are corrupt)" : ""))
            finishExchange(.transmitError("SCARD_E_COMM_DATA_LOST"), at: times[times.count - 1])
        }
        guard !trace.entries.isEmpty else {
            throw TraceError(.noExchanges, "no APDU exchange in the capture (\(frames.count) frame(s), activation only?)", path: path)
        }
        trace.headers.append(.init("title", "Proxmark3 capture\(path.map { " \(Self.baseName($0))" } ?? "")"))
        trace.headers.append(.init("source", "proxmark3"))
        // Another terminal's capture: its terminal data (TTQ, amount, country) are not ours.
        trace.headers.append(.init("match", "structural"))
        if let ats {
            trace.headers.append(.init("ats", Hex.encode(ats)))
            trace.headers.append(.init("atr", Hex.encode(pcscATR(ats: ats))))
        }
        if skipped > 0 { notes.append("\(skipped) frame(s) with a bad CRC or no ISO-DEP meaning were skipped") }
        trace.comments += notes
        return trace
    }

    /// The ATR a PC/SC reader builds for an ISO 14443-4 type A card (PC/SC part 3, 3.1.3.2.3.1):
    /// `3B 8n 80 01` + the ATS historical bytes + TCK.
    public static func pcscATR(ats: [UInt8]) -> [UInt8] {
        var historical: [UInt8] = []
        if ats.count >= 2 {
            let t0 = ats[1]
            var i = 2
            for bit in [0x10, 0x20, 0x40] as [UInt8] where t0 & bit != 0 { i += 1 }
            let tl = Int(ats[0])
            if i < min(tl, ats.count) { historical = Array(ats[i..<min(tl, ats.count)]) }
        }
        historical = Array(historical.prefix(15))
        var atr: [UInt8] = [0x3B, 0x80 | UInt8(historical.count), 0x80, 0x01] + historical
        atr.append(atr.dropFirst().reduce(0, ^))
        return atr
    }

    /// Cycles of the carrier as time, to the microsecond (as the recorder writes it).
    static func seconds(_ cycles: Int64) -> Duration {
        let c = max(0, cycles)
        let whole = c / carrierHz
        let micros = ((c % carrierHz) * 1_000_000 + carrierHz / 2) / carrierHz
        return .seconds(whole) + .microseconds(micros)
    }

    static func baseName(_ path: String) -> String {
        String(path.split(separator: "/").last ?? Substring(path))
    }
}
