import Foundation
import BERTLV
import EMVKernel
import PaymentGateway

/// The gateway's rules for the arguments of a payment, checked by both SDK faces before anything
/// touches a card (refused by the gateway instead, the order would end unclear after the
/// submission point).
enum PaymentArguments {
    /// More than 0 and at most 12 digits.
    static func isValidAmount(_ amount: Int) -> Bool {
        amount > 0 && amount <= Int(EMVAmount.maximum)
    }

    /// An order reference: the gateway's rule (``PaymentGateway/OrderID/isValid(_:)``).
    static func isValidOrderId(_ orderId: String) -> Bool {
        OrderID.isValid(orderId)
    }

    /// A currency: an ISO 4217 alphabetic code, three ASCII letters (either case: it is sent in
    /// upper case, the only case the gateway takes).
    static func isValidCurrency(_ currency: String) -> Bool {
        currency.utf8.count == 3 && currency.utf8.allSatisfy { (65...90).contains($0) || (97...122).contains($0) }
    }

    /// What is wrong with the currency of a payment for a reader with `terminal`'s settings: not
    /// a code, or not the currency the terminal gives the card (5F2A, which the gateway checks
    /// against the one it is asked to charge); nil when nothing is.
    static func currencyProblem(_ currency: String, terminal: TerminalConfiguration) -> String? {
        guard isValidCurrency(currency) else {
            return "the currency '\(currency.prefix(16))' is not an ISO 4217 code of three letters"
        }
        if let known = ISOCodes.currency(code: currency), known.numeric != Int(terminal.currencyCode) {
            return "the currency \(known.code) (\(known.numeric)) is not the one the reader's terminal settings give the card (5F2A \(terminal.currencyCode))"
        }
        return nil
    }

    /// A webhook address: the gateway's rule (``PaymentGateway/CallbackURL/isValid(_:)``): an http
    /// or https URL with a host, at most 2048 bytes, without spaces or control characters.
    static func isValidCallbackUrl(_ url: String) -> Bool {
        CallbackURL.isValid(url)
    }

    /// What is wrong with the amount of a payment, naming it; nil when nothing is. Both faces
    /// say it with these words.
    static func amountProblem(_ amount: Int) -> String? {
        // EMV carries the amount in 12 digits (9F02): anything larger cannot be sent to a card.
        // A card number typed into the amount is not echoed (it goes through the one policy).
        isValidAmount(amount) ? nil
            : "amount \(SensitiveData.maskedText(String(amount))): it must be more than 0 and at most 12 digits (\(EMVAmount.maximum))"
    }

    /// What is wrong with the arguments of a payment, naming the field; nil when nothing is.
    static func invalidArgument(amount: Int, orderId: String, callbackUrl: String?) -> String? {
        if let problem = amountProblem(amount) { return problem }
        if !isValidOrderId(orderId) {
            return "orderId: it must be \(OrderID.rule)"
        }
        if let url = callbackUrl, !isValidCallbackUrl(url) {
            return "callbackUrl '\(Self.printable(url.prefix(80)))': it must be an http or https URL with a host, at most 2048 bytes, without spaces or control characters"
        }
        return nil
    }

    /// `text` with its control characters shown as `\u{…}` and any card number masked (the one
    /// policy, ``BERTLV/SensitiveData``), for a message on one line.
    static func printable(_ text: Substring) -> String {
        SensitiveData.maskedText(
            text.unicodeScalars.map { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) ? "\\u{\(String($0.value, radix: 16))}" : String($0) }
                .joined())
    }
}
