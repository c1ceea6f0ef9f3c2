/// An ISO 7816-4 command APDU in any of the four cases, short or extended.
///
/// Shaped like CoreNFC's `NFCISO7816APDU`: ``expectedResponseLength`` is `-1` when Le is
/// absent, and 256 (short) or 65536 (extended) for "as many as the card has" (Le = `00` / `0000`).
public struct CommandAPDU: Hashable, Sendable {
    public var instructionClass: UInt8
    public var instructionCode: UInt8
    public var p1Parameter: UInt8
    public var p2Parameter: UInt8
    public var data: [UInt8]
    /// -1: no Le. 1...65536 otherwise.
    public var expectedResponseLength: Int
    /// Encoded with extended length fields although short ones would do (as a command decoded
    /// from such bytes was: `00A40400 000001` is a case 2E with Le 1, not a case 2S).
    public var usesExtendedLength = false

    /// Builds a command. `expectedResponseLength` is -1 (absent) or 1...65536; data up to 65535 bytes.
    /// Values out of range are our own misuse and trap.
    public init(instructionClass: UInt8, instructionCode: UInt8, p1Parameter: UInt8, p2Parameter: UInt8,
                data: [UInt8] = [], expectedResponseLength: Int = -1) {
        precondition(expectedResponseLength == -1 || (1...65536).contains(expectedResponseLength),
                     "Le must be -1 or 1...65536")
        precondition(data.count <= 65535, "command data longer than 65535 bytes")
        self.instructionClass = instructionClass
        self.instructionCode = instructionCode
        self.p1Parameter = p1Parameter
        self.p2Parameter = p2Parameter
        self.data = data
        self.expectedResponseLength = expectedResponseLength
    }

    /// Builds a command from values that come from outside (a command line, a file): a data
    /// field over 65535 bytes or an Le outside -1 and 1...65536 is ``ISO7816Error/Code/badLength``
    /// instead of a trap.
    public init(validatingClass cla: UInt8, instruction ins: UInt8, p1: UInt8, p2: UInt8,
                data: [UInt8] = [], expectedResponseLength: Int = -1) throws(ISO7816Error) {
        guard expectedResponseLength == -1 || (1...65536).contains(expectedResponseLength) else {
            throw ISO7816Error(.badLength, "Le of \(expectedResponseLength) (absent, or 1 to 65536)")
        }
        guard data.count <= 65535 else {
            throw ISO7816Error(.badLength, "command data of \(data.count) bytes (at most 65535)")
        }
        self.init(instructionClass: cla, instructionCode: ins, p1Parameter: p1, p2Parameter: p2,
                  data: data, expectedResponseLength: expectedResponseLength)
    }

    /// CryptoTokenKit-shaped convenience: `send(ins:p1:p2:data:le:)`; `le` nil means absent, 0 means 256.
    public init(cla: UInt8 = 0x00, ins: UInt8, p1: UInt8, p2: UInt8, data: [UInt8] = [], le: Int? = nil) {
        let expected: Int
        switch le {
        case nil: expected = -1
        case 0?: expected = data.count > 255 ? 65536 : 256
        case let n?: expected = n
        }
        self.init(instructionClass: cla, instructionCode: ins, p1Parameter: p1, p2Parameter: p2,
                  data: data, expectedResponseLength: expected)
    }

    /// The ISO 7816-3 case: 1 (no data, no Le), 2 (Le), 3 (data), 4 (data and Le).
    public var isoCase: Int {
        switch (data.isEmpty, expectedResponseLength == -1) {
        case (true, true): return 1
        case (true, false): return 2
        case (false, true): return 3
        case (false, false): return 4
        }
    }

    /// Whether the encoding has extended length fields: needed for more than 255 data bytes or
    /// an Le above 256, or chosen (``usesExtendedLength``).
    public var needsExtendedLength: Bool {
        usesExtendedLength || data.count > 255 || expectedResponseLength > 256
    }

    /// Encodes with short lengths when they suffice, extended otherwise.
    public var bytes: [UInt8] {
        // Zeroed first: an array made with `unsafeUninitializedCapacity` looks its storage type
        // up at run time, which costs more than writing the few bytes twice.
        var out = [UInt8](repeating: 0, count: encodedCount)
        out.withUnsafeMutableBufferPointer { encode(into: $0) }
        return out
    }

    /// Why this command cannot be encoded, or nil: its public fields were set out of range after
    /// it was made (data over 65535 bytes, an Le other than -1 or 1...65536). ``bytes`` and
    /// ``encode(into:)`` trap on such a command, as the initialisers do; a channel checks first
    /// and throws instead.
    public var encodingProblem: String? {
        if data.count > 65535 { return "command data of \(data.count) bytes (at most 65535)" }
        if expectedResponseLength != -1 && !(1...65536).contains(expectedResponseLength) {
            return "Le of \(expectedResponseLength) (absent, or 1 to 65536)"
        }
        return nil
    }

    /// The length of ``bytes``.
    public var encodedCount: Int {
        let hasLe = expectedResponseLength != -1
        if !needsExtendedLength {
            return 4 + (data.isEmpty ? 0 : 1 + data.count) + (hasLe ? 1 : 0)
        }
        return 4 + (data.isEmpty ? 0 : 3 + data.count) + (hasLe ? (data.isEmpty ? 3 : 2) : 0)
    }

    /// Writes ``bytes`` into `buffer`, which holds at least ``encodedCount`` bytes, and returns
    /// how many it wrote: for a caller with a buffer of its own (the PC/SC channel encodes each
    /// command on the stack, with no array per exchange).
    @discardableResult
    public func encode(into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        precondition(encodingProblem == nil, "an out-of-range command: \(encodingProblem ?? "")")
        precondition(buffer.count >= encodedCount, "the buffer is shorter than the encoded command")
        var i = 0
        func put(_ byte: UInt8) {
            buffer[i] = byte
            i += 1
        }
        func putData() {
            data.withUnsafeBufferPointer { d in
                if let source = d.baseAddress { (buffer.baseAddress! + i).initialize(from: source, count: d.count) }
            }
            i += data.count
        }
        put(instructionClass)
        put(instructionCode)
        put(p1Parameter)
        put(p2Parameter)
        let hasLe = expectedResponseLength != -1
        if !needsExtendedLength {
            if !data.isEmpty {
                put(UInt8(data.count))
                putData()
            }
            if hasLe { put(UInt8(truncatingIfNeeded: expectedResponseLength == 256 ? 0 : expectedResponseLength)) }
        } else {
            if !data.isEmpty {
                put(0)
                put(UInt8(data.count >> 8))
                put(UInt8(data.count & 0xFF))
                putData()
            }
            if hasLe {
                let le = expectedResponseLength == 65536 ? 0 : expectedResponseLength
                if data.isEmpty { put(0) }
                put(UInt8(le >> 8))
                put(UInt8(le & 0xFF))
            }
        }
        return i
    }

    /// Parses a command APDU, validating every length field (ISO 7816-3 §12.1.3 / 7816-4 §5.1).
    public init(bytes: some Collection<UInt8>) throws(ISO7816Error) {
        try self.init(parsing: Array(bytes))
    }

    /// ``init(bytes:)`` for an array (not called generically from other modules).
    public init(bytes: [UInt8]) throws(ISO7816Error) {
        try self.init(parsing: bytes)
    }

    private init(parsing b: [UInt8]) throws(ISO7816Error) {
        guard b.count >= 4 else {
            throw ISO7816Error(.tooShort, "command APDU of \(b.count) byte(s); the header alone is 4")
        }
        let header = (b[0], b[1], b[2], b[3])
        let body = b[4...]
        var data: [UInt8] = []
        var le = -1
        var extended = false
        if body.isEmpty {
            // case 1
        } else if body.count == 1 {
            // case 2 short
            le = body[body.startIndex] == 0 ? 256 : Int(body[body.startIndex])
        } else if body[body.startIndex] != 0 {
            // short case 3 or 4
            let lc = Int(body[body.startIndex])
            let rest = body.count - 1
            if rest == lc {
                data = Array(body.dropFirst())
            } else if rest == lc + 1 {
                data = Array(body.dropFirst().prefix(lc))
                let l = body[body.index(before: body.endIndex)]
                le = l == 0 ? 256 : Int(l)
            } else {
                throw ISO7816Error(.lengthMismatch,
                                   "Lc is \(lc) but \(rest) byte(s) follow it (expected \(lc) or \(lc + 1))")
            }
        } else {
            // extended: first body byte 00
            extended = true
            let s = body.startIndex
            if body.count == 3 {
                // case 2 extended
                let v = Int(body[s + 1]) << 8 | Int(body[s + 2])
                le = v == 0 ? 65536 : v
            } else if body.count < 3 {
                throw ISO7816Error(.badExtendedLength,
                                   "extended length marker 00 followed by \(body.count - 1) byte(s); need 2")
            } else {
                let lc = Int(body[s + 1]) << 8 | Int(body[s + 2])
                guard lc > 0 else {
                    throw ISO7816Error(.badExtendedLength, "extended Lc of 0000 with \(body.count - 3) more byte(s)")
                }
                let rest = body.count - 3
                if rest == lc {
                    data = Array(body[(s + 3)...])
                } else if rest == lc + 2 {
                    data = Array(body[(s + 3)..<(s + 3 + lc)])
                    let v = Int(body[s + 3 + lc]) << 8 | Int(body[s + 4 + lc])
                    le = v == 0 ? 65536 : v
                } else if rest == lc + 1 {
                    throw ISO7816Error(.badExtendedLength, "extended Lc \(lc) followed by a 1-byte (short) Le")
                } else {
                    throw ISO7816Error(.lengthMismatch,
                                       "extended Lc is \(lc) but \(rest) byte(s) follow it")
                }
            }
        }
        self.init(instructionClass: header.0, instructionCode: header.1, p1Parameter: header.2,
                  p2Parameter: header.3, data: data, expectedResponseLength: le)
        usesExtendedLength = extended
    }
}

extension CommandAPDU: CustomStringConvertible {
    public var description: String { Hex.encode(bytes) }
}

// MARK: - The commands an EMV reader sends

extension CommandAPDU {
    /// SELECT by DF name (AID or `2PAY.SYS.DDF01`), first or next occurrence, Le = 00.
    public static func select(name: [UInt8], nextOccurrence: Bool = false) -> CommandAPDU {
        CommandAPDU(cla: 0x00, ins: 0xA4, p1: 0x04, p2: nextOccurrence ? 0x02 : 0x00, data: name, le: 0)
    }

    /// SELECT of the Proximity Payment System Environment, `2PAY.SYS.DDF01`.
    public static let selectPPSE = select(name: Array("2PAY.SYS.DDF01".utf8))

    /// GET PROCESSING OPTIONS with the PDOL data (wrapped in tag 83, with a BER length:
    /// `83 LL` below 128 bytes, `83 81 LL` from 128). Up to 252 bytes fit a short APDU; 253 makes
    /// it extended. More than 255 is our own misuse (a PDOL asks for at most that) and traps.
    public static func getProcessingOptions(pdolData: [UInt8]) -> CommandAPDU {
        precondition(pdolData.count <= 255, "PDOL data longer than 255 bytes")
        var data: [UInt8] = []
        data.reserveCapacity(3 + pdolData.count)
        data.append(0x83)
        if pdolData.count >= 0x80 { data.append(0x81) }
        data.append(UInt8(pdolData.count))
        data.append(contentsOf: pdolData)
        return CommandAPDU(cla: 0x80, ins: 0xA8, p1: 0x00, p2: 0x00, data: data, le: 0)
    }

    /// READ RECORD `record` of short file `sfi` (1...30).
    public static func readRecord(_ record: UInt8, sfi: UInt8) -> CommandAPDU {
        CommandAPDU(cla: 0x00, ins: 0xB2, p1: record, p2: (sfi << 3) | 0x04, le: 0)
    }

    /// The kind of cryptogram a GENERATE AC asks for (P1 bits 8-7).
    public enum CryptogramRequest: UInt8, Sendable {
        case aac = 0x00, tc = 0x40, arqc = 0x80
    }

    /// GENERATE AC with the CDOL data.
    public static func generateAC(_ request: CryptogramRequest, cda: Bool = false, cdolData: [UInt8]) -> CommandAPDU {
        CommandAPDU(cla: 0x80, ins: 0xAE, p1: request.rawValue | (cda ? 0x10 : 0), p2: 0x00, data: cdolData, le: 0)
    }

    /// INTERNAL AUTHENTICATE with the DDOL data (EMV Book 3 §6.5.9: DDA's signature request).
    public static func internalAuthenticate(ddolData: [UInt8]) -> CommandAPDU {
        CommandAPDU(cla: 0x00, ins: 0x88, p1: 0x00, p2: 0x00, data: ddolData, le: 0)
    }

    /// GET RESPONSE for `length` bytes (0 = 256).
    public static func getResponse(_ length: UInt8) -> CommandAPDU {
        CommandAPDU(cla: 0x00, ins: 0xC0, p1: 0, p2: 0, le: Int(length) == 0 ? 256 : Int(length))
    }

    /// GET DATA for a primitive data object (ATC 9F36, PIN try counter 9F17, …).
    public static func getData(tag: UInt16) -> CommandAPDU {
        CommandAPDU(cla: 0x80, ins: 0xCA, p1: UInt8(tag >> 8), p2: UInt8(tag & 0xFF), le: 0)
    }

    /// A copy with a new Le (the 6Cxx dance).
    public func withExpectedLength(_ le: Int) -> CommandAPDU {
        var c = self
        c.expectedResponseLength = le
        return c
    }
}
