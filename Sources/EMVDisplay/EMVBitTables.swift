import BERTLV

// Bit meanings of the EMV bit-field data objects, byte by byte, bit 8 first (b8 … b1).
// `nil` is RFU. Written from EMV 4.4 Book 3 Annex C and Book 4 Annex A, Book C-2 (Mastercard)
// and Book C-3 (Visa).

enum EMVBitTables {
    typealias Table = [[String?]]

    /// Application Interchange Profile (82).
    static let aip: Table = [
        [nil, "SDA supported", "DDA supported", "Cardholder verification is supported",
         "Terminal risk management is to be performed", "Issuer authentication is supported",
         "On-device cardholder verification is supported (Mastercard)", "CDA supported"],
        ["EMV mode is supported (Mastercard) / MSD is supported (Visa)", nil, nil, nil, nil, nil, nil,
         "Relay resistance protocol is supported (Mastercard)"],
    ]

    /// Terminal Verification Results (95), Issuer and Terminal Action Codes.
    static let tvr: Table = [
        ["Offline data authentication was not performed", "SDA failed", "ICC data missing",
         "Card appears on terminal exception file", "DDA failed", "CDA failed", "SDA selected", nil],
        ["ICC and terminal have different application versions", "Expired application",
         "Application not yet effective", "Requested service not allowed for card product", "New card",
         nil, nil, nil],
        ["Cardholder verification was not successful", "Unrecognised CVM", "PIN Try Limit exceeded",
         "PIN entry required and PIN pad not present or not working",
         "PIN entry required, PIN pad present, but PIN was not entered", "Online PIN entered", nil, nil],
        ["Transaction exceeds floor limit", "Lower consecutive offline limit exceeded",
         "Upper consecutive offline limit exceeded", "Transaction selected randomly for online processing",
         "Merchant forced transaction online", "Relay resistance threshold exceeded (Mastercard)",
         "Relay resistance time limits exceeded (Mastercard)", nil],
        ["Default TDOL used", "Issuer authentication failed",
         "Script processing failed before final GENERATE AC", "Script processing failed after final GENERATE AC",
         nil, nil, "Relay resistance performed (Mastercard, bits 2-1 = 10)",
         "Relay resistance not performed (Mastercard, bits 2-1 = 01)"],
    ]

    /// Transaction Status Information (9B).
    static let tsi: Table = [
        ["Offline data authentication was performed", "Cardholder verification was performed",
         "Card risk management was performed", "Issuer authentication was performed",
         "Terminal risk management was performed", "Script processing was performed", nil, nil],
        [nil, nil, nil, nil, nil, nil, nil, nil],
    ]

    /// Terminal Transaction Qualifiers (9F66, Visa / Book C-3 and Book B).
    static let ttq: Table = [
        ["Mag-stripe mode supported", nil, "EMV mode supported", "EMV contact chip supported",
         "Offline-only reader", "Online PIN supported", "Signature supported",
         "Offline data authentication for online authorisations supported"],
        ["Online cryptogram required", "CVM required", "(Contact chip) offline PIN supported",
         nil, nil, nil, nil, nil],
        ["Issuer update processing supported", "Consumer device CVM supported", nil, nil, nil, nil, nil, nil],
        ["fDDA v1.0 supported", nil, nil, nil, nil, nil, nil, nil],
    ]

    /// Card Transaction Qualifiers (9F6C, Visa).
    static let ctq: Table = [
        ["Online PIN required", "Signature required",
         "Go online if offline data authentication fails and reader is online capable",
         "Switch interface if offline data authentication fails and reader supports contact chip",
         "Go online if application expired", "Switch interface for cash transactions",
         "Switch interface for cashback transactions", "Not valid for contactless ATM transactions"],
        ["Consumer device CVM performed", "Card supports issuer update processing at the POS",
         nil, nil, nil, nil, nil, nil],
    ]

    /// Terminal Capabilities (9F33, Book 4 Annex A2).
    static let terminalCapabilities: Table = [
        ["Card data input: manual key entry", "Card data input: magnetic stripe",
         "Card data input: IC with contacts", nil, nil, nil, nil, nil],
        ["CVM: plaintext PIN for ICC verification", "CVM: enciphered PIN for online verification",
         "CVM: signature (paper)", "CVM: enciphered PIN for offline verification", "CVM: no CVM required",
         nil, nil, nil],
        ["Security: SDA", "Security: DDA", "Security: card capture", nil, "Security: CDA", nil, nil, nil],
    ]

    /// Additional Terminal Capabilities (9F40, Book 4 Annex A3).
    static let additionalTerminalCapabilities: Table = [
        ["Transaction type: cash", "Transaction type: goods", "Transaction type: services",
         "Transaction type: cashback", "Transaction type: inquiry", "Transaction type: transfer",
         "Transaction type: payment", "Transaction type: administrative"],
        ["Transaction type: cash deposit", nil, nil, nil, nil, nil, nil, nil],
        ["Data input: numeric keys", "Data input: alphabetic and special characters keys",
         "Data input: command keys", "Data input: function keys", nil, nil, nil, nil],
        ["Data output: print, attendant", "Data output: print, cardholder", "Data output: display, attendant",
         "Data output: display, cardholder", nil, nil, "Code table 10", "Code table 9"],
        ["Code table 8", "Code table 7", "Code table 6", "Code table 5", "Code table 4", "Code table 3",
         "Code table 2", "Code table 1"],
    ]

    /// Application Usage Control (9F07).
    static let applicationUsageControl: Table = [
        ["Valid for domestic cash transactions", "Valid for international cash transactions",
         "Valid for domestic goods", "Valid for international goods", "Valid for domestic services",
         "Valid for international services", "Valid at ATMs", "Valid at terminals other than ATMs"],
        ["Domestic cashback allowed", "International cashback allowed", nil, nil, nil, nil, nil, nil],
    ]

    /// Form Factor Indicator (9F6E, Visa), byte 2: device features.
    static let formFactorFeatures: [String?] = [
        "Passcode capable", "Signature panel", "Hologram", "CVV2 present", "Two-way messaging capable",
        "Cloud-based payment credentials", "Biometric cardholder verification capable", nil,
    ]

    /// Mastercard Kernel Configuration (DF811B).
    static let kernelConfiguration: Table = [
        ["Mag-stripe mode contactless transactions not supported",
         "EMV mode contactless transactions not supported", "On-device cardholder verification supported",
         "Relay resistance protocol supported", nil, nil, nil, nil],
    ]

    /// Mastercard Card Data Input Capability (DF8117), CVM Capability (DF8118/DF8119/DF811E/DF812C)
    /// and Security Capability (DF811F) are bytes 1, 2 and 3 of Terminal Capabilities.
    static func oneByteOfTerminalCapabilities(_ index: Int) -> Table { [terminalCapabilities[index]] }
}
