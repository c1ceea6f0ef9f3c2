/// EMV amounts: Amount, Authorised (9F02) and Amount, Other (9F03) are numeric `n 12`, twelve BCD
/// digits of minor units.
public enum EMVAmount {
    /// The largest amount EMV can carry, in minor units: the one amount limit of every layer
    /// (the kernel's transaction, both SDK faces, the gateway, the command line).
    public static let maximum: UInt64 = 999_999_999_999
}
