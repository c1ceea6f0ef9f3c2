public import Foundation

// The rules of a payment request — its amount, currency, order id and webhook address — one
// owner for the SDK faces (which refuse a request before the card is touched), the gateway (a
// typed `invalidRequest`, nothing recorded) and the device's store: refused only by the
// gateway, an order would end unclear after the submission point.

/// The rule for a payment's amount, in minor units.
public enum PaymentAmount {
    /// More than 0 and at most 12 digits (``EMVAmount/maximum``): EMV carries the amount in
    /// 9F02, `n 12`, so anything larger cannot be sent to a card.
    public static func isValid(_ amount: Int) -> Bool {
        amount > 0 && amount <= Int(EMVAmount.maximum)
    }
}

/// The rule for a payment's currency: an ISO 4217 alphabetic code.
public enum CurrencyCode {
    /// Three ASCII letters, either case (the faces and the command line take `eur` and send it
    /// upper-cased).
    public static func isValid(_ code: String) -> Bool {
        code.utf8.count == 3 && code.utf8.allSatisfy { (65...90).contains($0) || (97...122).contains($0) }
    }

    /// Three upper-case ASCII letters: the only spelling the gateway takes.
    public static func isCanonical(_ code: String) -> Bool {
        code.utf8.count == 3 && code.utf8.allSatisfy { (65...90).contains($0) }
    }
}

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
        // Printable ASCII (the usual order id) holds no control, format or other white space
        // character and one character per byte: the rule below reduces to this, without its
        // per-scalar Unicode properties (2 % of an authorisation's CPU over HTTP, perf, issue 38).
        if orderId.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) {
            return orderId.utf8.contains { $0 != 0x20 } && orderId.utf8.count <= maximumLength
        }
        return !orderId.unicodeScalars.allSatisfy { CharacterSet.whitespaces.contains($0) } && orderId.count <= maximumLength
            && orderId.unicodeScalars.allSatisfy { !$0.properties.isWhitespace || $0 == " " }
            && !orderId.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value)
                || $0.properties.generalCategory == .format }
    }
}

/// The rule for a payment's `callbackUrl`, one for the gateway (a typed `invalidRequest`,
/// nothing recorded) and the SDK faces (`invalidArgument` before the card is touched).
public enum CallbackURL {
    /// The longest accepted, in bytes.
    public static let maximumLength = 2048

    /// An http or https URL with a host, at most ``maximumLength`` bytes, without a space or a
    /// control character (C0, DEL, C1) anywhere. Foundation's `URL(string:)` takes
    /// `http://h/a b` and a CR LF on Linux, but no HTTP client sends to such an address (libcurl
    /// refuses it as malformed): the payment would be recorded with a webhook that can never
    /// be delivered, retried for hours and given up, and a CR LF would split the server's log
    /// line. RFC 3986 has neither; percent-encode them (`%20`).
    public static func isValid(_ url: String) -> Bool {
        guard url.utf8.count <= maximumLength,
              !url.unicodeScalars.contains(where: { $0.value <= 0x20 || (0x7F...0x9F).contains($0.value) }),
              let u = URL(string: url), let scheme = u.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = u.host, !host.isEmpty else { return false }
        return true
    }
}
