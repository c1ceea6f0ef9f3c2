public import Foundation

/// The rule for a payment's `orderId`, one for the gateway (a typed `invalidRequest`, nothing
/// recorded) and the SDK faces (`invalidArgument` / `invalidParameters` before the card is
/// touched): refused only by the gateway, an order would end unclear after the submission point.
public enum OrderID {
    /// The longest accepted, in characters.
    public static let maximumLength = 128

    /// The rule in words, for messages.
    public static let rule = "1 to \(maximumLength) characters, not only spaces, without control or format characters "
        + "or white space other than the space"

    /// 1 to ``maximumLength`` characters, not only spaces, no white space but the space, no
    /// control character (C0, DEL, C1) and no format character (bidi overrides such as U+202E,
    /// zero-width marks): an order reference is shown to people and written on log lines, where
    /// such characters hide or reorder what it says.
    /// Whether two order IDs are the same one: the same bytes, as the ledger's SQL compares
    /// them. Swift's `==` takes canonically equivalent strings as equal — "café" composed and
    /// decomposed — which the ledger keeps as two orders: a comparison in Swift that said
    /// "same" there would give one order's payments or refunds to the other.
    public static func same(_ a: String, _ b: String) -> Bool {
        a.utf8.elementsEqual(b.utf8)
    }

    public static func isValid(_ orderId: String) -> Bool {
        !orderId.trimmingCharacters(in: .whitespaces).isEmpty && orderId.count <= maximumLength
            && orderId.unicodeScalars.allSatisfy { !$0.properties.isWhitespace || $0 == " " }
            && !orderId.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value)
                || $0.properties.generalCategory == .format }
    }
}
