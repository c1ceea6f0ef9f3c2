/// What a command APDU asks for, in words: for traces, logs and `tapemu apdu decode`.
extension CommandAPDU {
    /// The instruction's name, or `INS xx` when unknown.
    public var instructionName: String {
        Instruction.name(cla: instructionClass, ins: instructionCode) ?? "INS \(Hex.encode([instructionCode]))"
    }

    /// One line: `SELECT 2PAY.SYS.DDF01`, `READ RECORD SFI 1 record 2`, `GENERATE AC ARQC with CDA`,
    /// `GET DATA 9F36`.
    public var summary: String {
        switch (instructionClass & 0xF0, instructionCode) {
        case (_, 0xA4) where p1Parameter == 0x04:
            return "SELECT \(Self.printableOrHex(data))" + (p2Parameter & 0x03 == 0x02 ? " (next occurrence)" : "")
        case (_, 0xB2):
            if p2Parameter & 0x07 == 0x04 {
                return "READ RECORD SFI \(p2Parameter >> 3) record \(p1Parameter)"
            }
            return "READ RECORD P1 \(Hex.encode([p1Parameter])) P2 \(Hex.encode([p2Parameter]))"
        case (0x80, 0xAE):
            return "GENERATE AC \(Self.cryptogramName(p1Parameter))" + (p1Parameter & 0x10 != 0 ? " with CDA" : "")
        case (0x80, 0xCA), (0x00, 0xCA):
            return "GET DATA \(Hex.encode([p1Parameter, p2Parameter]))"
        default:
            return instructionName
        }
    }

    /// What P1 and P2 mean for this instruction, one line each; empty when they carry nothing
    /// this layer knows how to explain.
    public var parameterMeanings: [String] {
        let p1 = "P1 \(Hex.encode([p1Parameter]))", p2 = "P2 \(Hex.encode([p2Parameter]))"
        switch (instructionClass & 0xF0, instructionCode) {
        case (_, 0xA4):
            let selection: String = switch p1Parameter {
            case 0x00: "select MF, DF or EF by file identifier"
            case 0x01: "select child DF by file identifier"
            case 0x02: "select EF under the current DF"
            case 0x03: "select the parent DF of the current DF"
            case 0x04: "select by DF name (AID)"
            case 0x08: "select by path from the MF"
            case 0x09: "select by path from the current DF"
            default: "selection control \(Hex.encode([p1Parameter])) (unknown)"
            }
            let occurrence: String = switch p2Parameter & 0x03 {
            case 0: "first or only occurrence"
            case 1: "last occurrence"
            case 2: "next occurrence"
            default: "previous occurrence"
            }
            let response: String = switch p2Parameter & 0x0C {
            case 0x00: "return FCI"
            case 0x04: "return FCP"
            case 0x08: "return FMD"
            default: "no response data"
            }
            return ["\(p1): \(selection)", "\(p2): \(occurrence), \(response)"]
        case (_, 0xB2):
            let sfi = p2Parameter >> 3
            let file = sfi == 0 ? "currently selected EF" : "SFI \(sfi)"
            let mode: String = switch p2Parameter & 0x07 {
            case 0x04: "read record number P1"
            case 0x05: "read all records from P1 to the last"
            case 0x06: "read all records from the last to P1"
            case 0x00: "read the first record"
            case 0x01: "read the last record"
            case 0x02: "read the next record"
            case 0x03: "read the previous record"
            default: "record mode \(p2Parameter & 0x07) (RFU)"
            }
            return ["\(p1): record number \(p1Parameter)", "\(p2): \(file), \(mode)"]
        case (0x80, 0xA8):
            let ok = p1Parameter == 0 && p2Parameter == 0
            return ["\(p1) \(p2)" + (ok ? ": always 00 00" : ": should be 00 00")]
        case (0x80, 0xAE):
            var lines = ["\(p1): request \(Self.cryptogramName(p1Parameter))"
                         + (p1Parameter & 0x10 != 0 ? ", CDA signature requested" : ", no CDA signature")]
            if p1Parameter & 0x2F != 0 { lines.append("\(p1): RFU bits set (\(Hex.encode([p1Parameter & 0x2F])))") }
            lines.append("\(p2): " + (p2Parameter == 0 ? "00" : "should be 00"))
            return lines
        case (0x80, 0xCA), (0x00, 0xCA):
            return ["\(p1) \(p2): data object \(Hex.encode([p1Parameter, p2Parameter]))"]
        case (_, 0xC0):
            return ["\(p1) \(p2)" + (p1Parameter == 0 && p2Parameter == 0 ? ": always 00 00" : ": should be 00 00")]
        case (_, 0x20):
            let kind: String = switch p2Parameter {
            case 0x80: "plaintext PIN"
            case 0x88: "enciphered PIN"
            default: "qualifier \(Hex.encode([p2Parameter]))"
            }
            return ["\(p2): \(kind)"]
        default:
            return []
        }
    }

    static func cryptogramName(_ p1: UInt8) -> String {
        switch p1 >> 6 {
        case 0: "AAC"
        case 1: "TC"
        case 2: "ARQC"
        default: "RFU (P1 bits 8-7 = 11)"
        }
    }

    static func printableOrHex(_ bytes: [UInt8]) -> String {
        if !bytes.isEmpty, bytes.allSatisfy({ (0x21...0x7E).contains($0) }) {
            return String(decoding: bytes, as: UTF8.self)
        }
        return Hex.encode(bytes)
    }
}
