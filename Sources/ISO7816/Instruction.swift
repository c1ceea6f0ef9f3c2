/// Names of the instructions an EMV reader and a PC/SC reader exchange, for explanations.
public enum Instruction {
    /// The instruction's name, or nil when unknown. `cla` matters for the proprietary class 80.
    public static func name(cla: UInt8, ins: UInt8) -> String? {
        switch (cla & 0xF0, ins) {
        case (_, 0xA4): return "SELECT"
        case (0x80, 0xA8): return "GET PROCESSING OPTIONS"
        case (_, 0xB2): return "READ RECORD"
        case (_, 0xB0): return "READ BINARY"
        case (0x80, 0xAE): return "GENERATE AC"
        case (_, 0xC0): return "GET RESPONSE"
        case (0x80, 0xCA): return "GET DATA"
        case (0x00, 0xCA): return "GET DATA"
        case (0xF0, 0xCA): return "GET DATA (PC/SC pseudo-APDU)"
        case (_, 0x20): return "VERIFY"
        case (_, 0x84): return "GET CHALLENGE"
        case (_, 0x88): return "INTERNAL AUTHENTICATE"
        case (_, 0x82): return "EXTERNAL AUTHENTICATE"
        case (0x80, 0x2A), (0x80, 0x2C): return "COMPUTE CRYPTOGRAPHIC CHECKSUM"
        case (0x80, 0x1E): return "APPLICATION BLOCK"
        case (0x80, 0x18): return "APPLICATION UNBLOCK"
        case (0x80, 0x24): return "PIN CHANGE/UNBLOCK"
        case (0x80, 0x16): return "CARD BLOCK"
        case (_, 0xE2): return "APPEND RECORD"
        case (_, 0xDC): return "UPDATE RECORD"
        case (0x80, 0xD0): return "EXCHANGE RELAY RESISTANCE DATA"
        case (0x80, 0xEA): return "EXCHANGE RELAY RESISTANCE DATA"
        case (_, 0x70): return "MANAGE CHANNEL"
        default: return nil
        }
    }
}
