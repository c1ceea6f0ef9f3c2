/// The format of an EMV data element (EMV Book 3 §4.3).
public enum DataFormat: String, Hashable, Sendable, CaseIterable {
    /// Alphabetic.
    case a
    /// Alphanumeric.
    case an
    /// Alphanumeric special (printable).
    case ans
    /// Binary.
    case b
    /// Compressed numeric: BCD, left-justified, padded on the right with `F`.
    case cn
    /// Numeric: BCD, right-justified, padded on the left with `0`.
    case n
    /// A constructed template (holds other data objects).
    case template
    /// A variable or mixed format.
    case variable = "var"
}

/// Where a data element comes from.
public enum DataSource: String, Hashable, Sendable {
    case card = "ICC"
    case terminal = "Terminal"
    case issuer = "Issuer"
    case both = "ICC/Terminal"
}
