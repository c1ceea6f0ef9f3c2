/// The ATR a PC/SC reader synthesises for a contactless card (PC/SC part 3, §3.1.3.2.3).
public enum ContactlessATR {
    /// For an ISO 14443-4 type A card: `3B 8n 80 01 <historical bytes from the ATS> TCK`, where n
    /// is the number of historical bytes (at most 15; more are cut) and TCK the XOR of every byte
    /// from T0 on. With none: `3B 80 80 01 01`.
    public static func typeA(historicalBytes: [UInt8]) -> [UInt8] {
        let historical = historicalBytes.prefix(15)
        var atr: [UInt8] = [0x3B, 0x80 | UInt8(historical.count), 0x80, 0x01]
        atr += historical
        atr.append(atr.dropFirst().reduce(0, ^))
        return atr
    }
}
