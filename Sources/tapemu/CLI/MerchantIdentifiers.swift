/// The one rule for the merchant's identifiers in output: an order id (and an attempt id) is
/// shown as given — in results, lists and errors — even when its digits would pass for a card
/// number: it is the merchant's reference, and an error must quote it so it can be copied back.
/// Everything else a user types (a reason, a note) and every card field is masked by
/// ``SensitiveData`` (README, "Sensitive data").
enum MerchantIdentifiers {
    /// The options whose values are identifiers.
    static let optionNames = ["--order-id", "--attempt"]

    /// The identifiers typed on a command line (`--order-id X`, `--order-id=X`), before `--`.
    static func typed(_ arguments: [String]) -> [String] {
        var out: [String] = []
        var previous: String?
        for token in arguments.prefix(while: { $0 != "--" }) {
            if let p = previous, optionNames.contains(p) { out.append(token) }
            for name in optionNames where token.hasPrefix(name + "=") { out.append(String(token.dropFirst(name.count + 1))) }
            previous = token
        }
        return out
    }
}

extension PendingCloseCommand {
    var identifiers: [String] { [orderId] + (attemptId.map { [$0] } ?? []) }
}
