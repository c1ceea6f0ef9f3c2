import Foundation
import PaymentRules
package import EMVKernel

/// What both SDK faces say about the arguments of a payment before anything touches a card,
/// by the request rules (``PaymentAmount``, ``CurrencyCode``, ``OrderID``, ``CallbackURL`` in
/// `PaymentRules`, the gateway's too: refused by the gateway instead, the order would end unclear
/// after the submission point).
package enum PaymentArguments {
    /// What is wrong with the currency of a payment for a reader with `terminal`'s settings: not
    /// a code, or not the currency the terminal gives the card (5F2A, which the gateway checks
    /// against the one it is asked to charge); nil when nothing is.
    package static func currencyProblem(_ currency: String, terminal: TerminalConfiguration) -> String? {
        guard CurrencyCode.isValid(currency) else {
            return "the currency '\(currency.prefix(16))' is not an ISO 4217 code of three letters"
        }
        if let known = ISOCodes.currency(code: currency), known.numeric != Int(terminal.currencyCode) {
            return "the currency \(known.code) (\(known.numeric)) is not the one the reader's terminal settings give the card (5F2A \(terminal.currencyCode))"
        }
        return nil
    }

    /// What is wrong with the amount of a payment, naming it; nil when nothing is. Both faces
    /// say it with these words.
    package static func amountProblem(_ amount: Int) -> String? {
        // EMV carries the amount in 12 digits (9F02): anything larger cannot be sent to a card.
        // A card number typed into the amount is not echoed (it goes through the one policy).
        PaymentAmount.isValid(amount) ? nil
            : "amount \(SensitiveData.maskedText(String(amount))): it must be more than 0 and at most 12 digits (\(EMVAmount.maximum))"
    }

    /// What is wrong with the arguments of a payment, naming the field; nil when nothing is.
    package static func invalidArgument(amount: Int, orderId: String, callbackUrl: String?) -> String? {
        if let problem = amountProblem(amount) { return problem }
        if !OrderID.isValid(orderId) {
            return "orderId: it must be \(OrderID.rule)"
        }
        if let url = callbackUrl, !CallbackURL.isValid(url) {
            return "callbackUrl '\(Self.printable(url.prefix(80)))': it must be an http or https URL with a host, at most 2048 bytes, without spaces or control characters"
        }
        return nil
    }

    /// `text` with its control characters shown as `\u{…}` and any card number masked (the one
    /// policy, ``BERTLV/SensitiveData``), for a message on one line.
    package static func printable(_ text: Substring) -> String {
        SensitiveData.maskedText(
            text.unicodeScalars.map { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) ? "\\u{\(String($0.value, radix: 16))}" : String($0) }
                .joined())
    }
}
