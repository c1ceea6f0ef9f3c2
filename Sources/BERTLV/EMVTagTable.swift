extension EMVTagDictionary {
    /// The entries (EMV Book 3 Annex A, EMV Book C-x contactless kernels).
    static let entries: [TagInfo] = [
        TagInfo(0x4F, "Application Identifier (AID) - card", .b, .card, length: 5...16),
        TagInfo(0x50, "Application Label", .ans, .card, length: 1...16),
        TagInfo(0x57, "Track 2 Equivalent Data", .b, .card, length: 0...19),
        TagInfo(0x5A, "Application Primary Account Number (PAN)", .cn, .card, length: 0...10),
        TagInfo(0x5F2A, "Transaction Currency Code", .n, .terminal, length: 2...2),
        TagInfo(0x5F24, "Application Expiration Date", .n, .card, length: 3...3),
        TagInfo(0x5F34, "Application PAN Sequence Number", .n, .card, length: 1...1),
        TagInfo(0x82, "Application Interchange Profile", .b, .card, length: 2...2),
        TagInfo(0x94, "Application File Locator (AFL)", .variable, .card, length: 0...252),
        TagInfo(0x95, "Terminal Verification Results", .b, .terminal, length: 5...5),
        TagInfo(0x9A, "Transaction Date", .n, .terminal, length: 3...3),
        TagInfo(0x9C, "Transaction Type", .n, .terminal, length: 1...1),
        TagInfo(0x9F02, "Amount, Authorised (Numeric)", .n, .terminal, length: 6...6),
        TagInfo(0x9F03, "Amount, Other (Numeric)", .n, .terminal, length: 6...6),
        TagInfo(0x9F1A, "Terminal Country Code", .n, .terminal, length: 2...2),
        TagInfo(0x9F21, "Transaction Time", .n, .terminal, length: 3...3),
        TagInfo(0x9F33, "Terminal Capabilities", .b, .terminal, length: 3...3),
        TagInfo(0x9F35, "Terminal Type", .n, .terminal, length: 1...1),
        TagInfo(0x9F37, "Unpredictable Number", .b, .terminal, length: 4...4),
        TagInfo(0x9F66, "Terminal Transaction Qualifiers (TTQ)", .b, .terminal, length: 4...4),
    ]
}
