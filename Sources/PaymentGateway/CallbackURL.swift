public import Foundation

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
