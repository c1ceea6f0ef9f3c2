import BERTLV
public import PaymentRules
import ISO7816

/// What cardholder verification decided, and why.
public struct CVMDecision: Hashable, Sendable {
    public var cvm: CardholderVerification
    /// CVM Results (9F34): the method performed (or `3F`), the condition, the result (`00`
    /// unknown, `01` failed, `02` successful). Sent in the CDOL data and the online data.
    public var results: [UInt8]
    /// The kernel whose rules decided.
    public var kernel: ContactlessKernel
    /// The rule that decided, for people: `CVM list rule 2 of 2 (02 03: online PIN, if the
    /// terminal supports it): above the 50.00 CVM required limit the reader offers online PIN`.
    public var reason: String {
        get { text ?? why.text }
        set { text = newValue }
    }
    /// What the reason is written from: the text (amounts, bytes, names) is built only when
    /// someone reads it, not on every card read.
    var why: CVMReason
    /// A reason set from outside, which replaces `why`'s.
    private var text: String?

    init(cvm: CardholderVerification, results: [UInt8], kernel: ContactlessKernel, why: CVMReason) {
        self.cvm = cvm
        self.results = results
        self.kernel = kernel
        self.why = why
    }

    // Equal and hashed as the four public properties, the reason by its text.
    public static func == (a: CVMDecision, b: CVMDecision) -> Bool {
        a.cvm == b.cvm && a.results == b.results && a.kernel == b.kernel && a.reason == b.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(cvm)
        hasher.combine(results)
        hasher.combine(kernel)
        hasher.combine(reason)
    }
}

extension CVMDecision: CustomReflectable {
    /// The four public properties, as a decision with a stored reason showed them (printed and
    /// dumped the same way).
    public var customMirror: Mirror {
        Mirror(self, children: ["cvm": cvm, "results": results, "kernel": kernel, "reason": reason], displayStyle: .struct)
    }
}

/// The facts a ``CVMDecision/reason`` is written from: numbers and bytes only, so deciding
/// builds no text.
struct CVMReason: Sendable {
    enum Kind: Sendable {
        // By the card transaction qualifiers.
        case ctqOnlinePIN, ctqConsumerDevice, ctqSignature, ctqNoCVM
        /// The reader needs a CVM the card did not name (or named one the reader cannot do).
        case ctqNeedSignature, ctqNeedOnlinePIN, ctqNeedNothingOffered
        // Without them.
        case onDevice, noCVMList, noCardholderVerification
        // By the CVM list.
        case listRulePerformed, listRuleFailed, listNoRule
    }

    var kind: Kind
    /// The amount, the limit and the currency exponent they are written with.
    var amount: UInt64, limit: UInt64, exponent: UInt8
    var required: Bool, definesCTQ: Bool
    /// Card transaction qualifiers bytes 1 and 2; whether the card asked for a CVM.
    var ctq: (UInt8, UInt8) = (0, 0), asked = false
    /// The CVM list rule (1-based of `rules`), its bytes, amounts X and Y, and the reader's capability.
    var rule = 0, rules = 0, code: UInt8 = 0, condition: UInt8 = 0, x: UInt64 = 0, y: UInt64 = 0, capability: UInt8 = 0

    init(_ kind: Kind, amount: UInt64, limit: UInt64, exponent: UInt8, required: Bool, definesCTQ: Bool) {
        self.kind = kind
        self.amount = amount
        self.limit = limit
        self.exponent = exponent
        self.required = required
        self.definesCTQ = definesCTQ
    }

    var text: String {
        let limitText = "the \(CVMProcessing.money(limit, exponent: exponent)) CVM required limit"
        var amountText: String {
            let amount = CVMProcessing.money(self.amount, exponent: exponent)
            return required ? "\(amount) is \(definesCTQ ? "at or above" : "above") \(limitText)"
                            : "\(amount) is \(definesCTQ ? "below" : "at or below") \(limitText)"
        }
        func byCTQ(_ why: String) -> String { "card transaction qualifiers 9F6C \(Hex.encode([ctq.0, ctq.1])): \(why)" }
        var need: String { asked ? "the card asks for a CVM this reader cannot do" : "\(amountText) and the card names no CVM" }
        func byList(_ why: String) -> String {
            "\(why); \(required ? "above" : "at or below") \(limitText) the reader offers \(CVMProcessing.methods(capability))"
        }
        var ruleText: String {
            let method = code & 0x3F
            return "CVM list rule \(rule) of \(rules) (\(Hex.encode([code])) \(Hex.encode([condition])): "
                + "\(CVMProcessing.methodName(method)), "
                + "\(CVMProcessing.conditionName(condition, x: x, y: y, exponent: exponent)))"
        }
        switch kind {
        case .ctqOnlinePIN: return byCTQ("online PIN required (byte 1 bit 8)")
        case .ctqConsumerDevice: return byCTQ("consumer device CVM performed (byte 2 bit 8)")
        case .ctqSignature: return byCTQ("signature required (byte 1 bit 7)")
        case .ctqNoCVM: return byCTQ("the card asks for no CVM, and \(amountText)")
        case .ctqNeedSignature: return byCTQ("\(need): signature")
        case .ctqNeedOnlinePIN: return byCTQ("\(need): online PIN")
        case .ctqNeedNothingOffered: return byCTQ("\(need), and the reader has none to offer")
        case .onDevice:
            return "\(amountText), and the card supports on-device cardholder verification (AIP byte 1 bit 2)"
        case .noCVMList: return "the card has no CVM list (8E): none performed"
        case .noCardholderVerification:
            return "the card does not support cardholder verification (AIP byte 1 bit 5): none performed"
        case .listRulePerformed: return byList(ruleText)
        case .listRuleFailed:
            let why = code & 0x3F == 0x00 ? "fail CVM processing" : "the reader does not offer it, and the rule says not to go on"
            return byList("\(ruleText): \(why)")
        case .listNoRule: return byList("no rule of the CVM list applies")
        }
    }
}

/// Cardholder verification: which CVM the card, the kernel and the amount call for, and the CVM
/// Results (9F34) that say so.
///
/// - Kernels whose book defines the Card Transaction Qualifiers (C-1, C-3, C-7): 9F6C says what
///   the card wants (Book C-3 §5.8 and Annex A.2; Book C-7 Annex A).
/// - Every other kernel — C-2, C-4, C-5, C-6, domestic kernels, none — reads 9F6C as something
///   else or not at all, and runs the card's CVM list (8E) as EMV Book 3 §10.5 says, with the
///   reader's CVM capability chosen by the amount (Book C-2 §3.2, §7.5): above the reader CVM
///   required limit the methods of ``TerminalConfiguration/cvmCapabilityCVMRequired``, else those
///   of ``TerminalConfiguration/cvmCapabilityNoCVMRequired``. An on-device verification the card
///   supports (AIP byte 1 bit 2) is taken when a CVM is required.
enum CVMProcessing {
    static func decide(store: CardDataStore, aip: [UInt8], kernel: ContactlessKernel,
                       configuration c: TerminalConfiguration, transaction t: Transaction) throws(KernelError) -> CVMDecision {
        let limit = c.cvmRequiredLimit(for: kernel)
        let required = kernel.requiresCVM(amount: t.amount, limit: limit)
        let facts = CVMReason(.noCVMList, amount: t.amount, limit: limit, exponent: c.currencyExponent,
                              required: required, definesCTQ: kernel.definesCardTransactionQualifiers)
        func decision(_ cvm: CardholderVerification, _ results: [UInt8], _ kind: CVMReason.Kind) -> CVMDecision {
            var why = facts
            why.kind = kind
            return CVMDecision(cvm: cvm, results: results, kernel: kernel, why: why)
        }

        if kernel.definesCardTransactionQualifiers, let ctq = store[.cardTransactionQualifiers] {
            guard ctq.count >= 2 else {
                throw KernelError(.malformedResponse, step: .cardData,
                                  "the card transaction qualifiers 9F6C are \(ctq.count) byte(s), not 2")
            }
            return byCTQ(ctq, c, kernel: kernel, facts: facts)
        }

        // On-device cardholder verification (AIP byte 1 bit 2), e.g. a phone (Book C-2 §7.5).
        if required, aip.count == 2, aip[0] & 0x02 != 0, c.supportsConsumerDeviceCVM {
            return decision(.consumerDevice, [0x01, 0x00, 0x02], .onDevice)
        }
        guard aip.count == 2, aip[0] & 0x10 != 0, let list = store[.cvmList] else {
            let kind: CVMReason.Kind = aip.count == 2 && aip[0] & 0x10 != 0 ? .noCVMList : .noCardholderVerification
            return decision(.noCVM, [0x3F, 0x00, 0x00], kind)
        }
        var listFacts = facts
        listFacts.capability = required ? c.cvmCapabilityCVMRequired : c.cvmCapabilityNoCVMRequired
        return try byList(list, store: store, c, t, kernel: kernel, facts: listFacts)
    }

    /// Visa-style: the card transaction qualifiers say what the card wants (Book C-3 §5.8).
    static func byCTQ(_ ctq: [UInt8], _ c: TerminalConfiguration, kernel: ContactlessKernel,
                      facts: CVMReason) -> CVMDecision {
        var why = facts
        why.ctq = (ctq[0], ctq[1])
        func d(_ cvm: CardholderVerification, _ results: [UInt8], _ kind: CVMReason.Kind) -> CVMDecision {
            why.kind = kind
            return CVMDecision(cvm: cvm, results: results, kernel: kernel, why: why)
        }
        if ctq[0] & 0x80 != 0, c.supportsOnlinePIN { return d(.onlinePIN, [0x02, 0x00, 0x00], .ctqOnlinePIN) }
        if ctq[1] & 0x80 != 0, c.supportsConsumerDeviceCVM {
            return d(.consumerDevice, [0x01, 0x00, 0x02], .ctqConsumerDevice)
        }
        if ctq[0] & 0x40 != 0, c.supportsSignature { return d(.signature, [0x1E, 0x00, 0x00], .ctqSignature) }
        let asked = ctq[0] & 0xC0 != 0 || ctq[1] & 0x80 != 0
        if !asked && !facts.required { return d(.noCVM, [0x1F, 0x00, 0x02], .ctqNoCVM) }
        // The reader needs a CVM and the card named none it can do.
        why.asked = asked
        if c.supportsSignature { return d(.signature, [0x1E, 0x00, 0x00], .ctqNeedSignature) }
        if c.supportsOnlinePIN { return d(.onlinePIN, [0x02, 0x00, 0x00], .ctqNeedOnlinePIN) }
        return d(.failed, [0x3F, 0x00, 0x01], .ctqNeedNothingOffered)
    }

    /// The CVM list (8E), EMV Book 3 §10.5: amounts X and Y, then rules of (CVM code, condition)
    /// tried in order. A rule whose condition is satisfied is performed when the reader offers its
    /// method; when it does not (or the method is "fail CVM processing"), the next rule is tried if
    /// the code's bit 7 says "apply succeeding CV rule if this CVM is unsuccessful", else cardholder
    /// verification fails. No rule satisfied: it fails too (`3F 00 01`). `facts.capability`: what
    /// the reader offers (byte 2 of terminal capabilities).
    static func byList(_ list: [UInt8], store: CardDataStore, _ c: TerminalConfiguration,
                       _ t: Transaction, kernel: ContactlessKernel, facts: CVMReason) throws(KernelError) -> CVMDecision {
        guard list.count >= 8, list.count % 2 == 0 else {
            throw KernelError(.malformedResponse, step: .cardData,
                              "the CVM list 8E is \(list.count) byte(s); it needs 8 for X and Y, then 2-byte rules")
        }
        func amount(_ at: Int) -> UInt64 { list[at..<(at + 4)].reduce(0) { $0 << 8 | UInt64($1) } }
        let x = amount(0), y = amount(4)
        let appCurrency = store[.applicationCurrencyCode].flatMap { ISOCodes.numericCode(bcd: $0) }
        let sameCurrency = appCurrency == Int(c.currencyCode)
        let unattended = (4...6).contains(c.terminalType & 0x0F)
        let rules = (list.count - 8) / 2
        let capability = facts.capability
        var why = facts
        why.rules = rules
        why.x = x
        why.y = y
        func d(_ cvm: CardholderVerification, _ results: [UInt8], _ kind: CVMReason.Kind) -> CVMDecision {
            why.kind = kind
            return CVMDecision(cvm: cvm, results: results, kernel: kernel, why: why)
        }

        for n in 0..<rules {
            let code = list[8 + 2 * n], condition = list[9 + 2 * n]
            let method = code & 0x3F
            guard satisfied(condition, method: method, capability: capability, x: x, y: y, sameCurrency: sameCurrency,
                            unattended: unattended, t) else { continue }
            why.rule = n + 1
            why.code = code
            why.condition = condition
            if method != 0x00, let cvm = offered(method, capability: capability) {
                return d(cvm, [code, condition, cvm == .noCVM ? 0x02 : 0x00], .listRulePerformed)
            }
            if code & 0x40 == 0 {
                return d(.failed, [code, condition, 0x01], .listRuleFailed)
            }
        }
        return d(.failed, [0x3F, 0x00, 0x01], .listNoRule)
    }

    /// The method a reader with `capability` (byte 2 of terminal capabilities, 9F33) can perform.
    /// Offline PIN is not done on a contactless reader; proprietary methods are not known.
    static func offered(_ method: UInt8, capability: UInt8) -> CardholderVerification? {
        switch method {
        case 0x02: capability & 0x40 != 0 ? .onlinePIN : nil
        case 0x1E: capability & 0x20 != 0 ? .signature : nil
        case 0x1F: capability & 0x08 != 0 ? .noCVM : nil
        default: nil
        }
    }

    static func satisfied(_ condition: UInt8, method: UInt8, capability: UInt8, x: UInt64, y: UInt64,
                          sameCurrency: Bool, unattended: Bool, _ t: Transaction) -> Bool {
        switch condition {
        case 0x00: return true                                                   // always
        case 0x01: return unattended && t.type == .cashAdvance                   // unattended cash
        case 0x02: return t.type != .cashAdvance && t.type != .purchaseWithCashback   // not cash, manual cash, cashback
        case 0x03: return method != 0x00 && offered(method, capability: capability) != nil   // terminal supports the CVM
        case 0x04: return !unattended && t.type == .cashAdvance                  // manual cash
        case 0x05: return t.type == .purchaseWithCashback                        // purchase with cashback
        case 0x06: return sameCurrency && t.amount < x                           // in the application currency, under X
        case 0x07: return sameCurrency && t.amount > x                           // … over X
        case 0x08: return sameCurrency && t.amount < y                           // … under Y
        case 0x09: return sameCurrency && t.amount > y                           // … over Y
        default: return false                                                    // RFU or proprietary
        }
    }

    static func methodName(_ method: UInt8) -> String {
        switch method {
        case 0x00: "fail CVM processing"
        case 0x01: "plaintext PIN verified offline"
        case 0x02: "online PIN"
        case 0x03: "plaintext offline PIN and signature"
        case 0x04: "enciphered PIN verified offline"
        case 0x05: "enciphered offline PIN and signature"
        case 0x1E: "signature"
        case 0x1F: "no CVM required"
        default: "method " + Hex.encode([method])
        }
    }

    static func conditionName(_ condition: UInt8, x: UInt64, y: UInt64, exponent: UInt8) -> String {
        switch condition {
        case 0x00: "always"
        case 0x01: "if unattended cash"
        case 0x02: "if not cash or cashback"
        case 0x03: "if the terminal supports the CVM"
        case 0x04: "if manual cash"
        case 0x05: "if purchase with cashback"
        case 0x06: "if under X = \(money(x, exponent: exponent))"
        case 0x07: "if over X = \(money(x, exponent: exponent))"
        case 0x08: "if under Y = \(money(y, exponent: exponent))"
        case 0x09: "if over Y = \(money(y, exponent: exponent))"
        default: "condition " + Hex.encode([condition])
        }
    }

    /// The methods a capability byte offers, for people.
    static func methods(_ capability: UInt8) -> String {
        let names = [(UInt8(0x40), "online PIN"), (0x20, "signature"), (0x08, "no CVM")]
            .filter { capability & $0.0 != 0 }.map(\.1)
        return names.isEmpty ? "no method" : names.joined(separator: ", ")
    }

    static func money(_ minor: UInt64, exponent: UInt8) -> String {
        let e = Int(exponent)
        guard e > 0 else { return "\(minor)" }
        var p: UInt64 = 1
        for _ in 0..<e { p *= 10 }
        let frac = String(minor % p)
        return "\(minor / p).\(String(repeating: "0", count: e - frac.count))\(frac)"
    }
}
