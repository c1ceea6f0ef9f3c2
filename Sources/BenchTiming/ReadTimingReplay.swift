import BERTLV
public import PaymentRules
import CardChannel
import ISO7816
public import APDUTrace
public import EMVKernel

/// How to run the kernel on a recorded trace's card so it sends what the recorded reader sent:
/// the trace's own amount, currency and country (found through the card's PDOL/CDOL), DDA when
/// the recorded reader ran it, and its matching mode (`@match`, else masked). Shared by the two benchmarks that replay the corpus.
public struct TraceReplaySetup: Sendable {
    public var configuration: TerminalConfiguration
    public var transaction: Transaction
    public var matching: TraceMatching
    /// The recorded unpredictable number (9F37) and, when the card asked for them, the recorded
    /// date (9A; else a `@transaction-date YYMMDD` header) and time (9F21): a kernel run with them sends exactly what the recorded reader
    /// sent, and the online data it reports (field 55) is the data the recorded cryptogram was
    /// made over. Nil when the card did not ask for 9F37 (the system's are then as good).
    public var environment: KernelEnvironment?

    /// - Parameters:
    ///   - mode: overrides the trace's `@match` header.
    ///   - amount: overrides the recorded amount (masked matching then ignores amount and currency).
    public init(trace: APDUTrace, mode: TraceMatchMode? = nil, amount: UInt64? = nil) {
        let recorded = trace.terminalData
        var configuration = TerminalConfiguration.default
        // A trace is outside input: a code that is not n 3 is ignored, never converted as it is.
        if let c = recorded[.transactionCurrencyCode].flatMap({ ISOCodes.numericCode(bcd: $0) }) {
            configuration.currencyCode = UInt16(c)
        }
        if let c = recorded[.terminalCountryCode].flatMap({ ISOCodes.numericCode(bcd: $0) }) {
            configuration.countryCode = UInt16(c)
        }
        // A recorded INTERNAL AUTHENTICATE: the recorded terminal ran DDA, so it supported it
        // (terminal capabilities 9F33 byte 3 bit 7; tapemu's default reader does CDA only), and
        // unless it then asked for CDA (GENERATE AC P1 bit 5) it did not do CDA with this card.
        let instructions = trace.exchanges.map { $0.command.count > 2 ? ($0.command[1], $0.command[2]) : (0, 0) }
        if instructions.contains(where: { $0.0 == 0x88 }) {
            configuration.terminalCapabilities[2] |= 0x40
            if !instructions.contains(where: { $0.0 == 0xAE && $0.1 & 0x10 != 0 }) {
                configuration.terminalCapabilities[2] &= ~0x08
            }
        }
        let recordedAmount = recorded[.amountAuthorised].flatMap(BCD.value)
        self.configuration = configuration
        self.transaction = Transaction(amount: amount ?? min(recordedAmount ?? 1000, EMVAmount.maximum))
        let mode = mode ?? TraceMatching.declared(by: trace).mode
        self.matching = TraceMatching(mode: mode, overridesAmount: amount != nil)
        if let un = recorded[.unpredictableNumber], un.count == 4 {
            let number = un.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            // A trace whose card never asked for the date may say it: `@transaction-date YYMMDD`
            // (a reconstructed trace; certificates expire).
            let date = recorded[.transactionDate]
                ?? trace[header: "transaction-date"].flatMap { try? Hex.decode($0) }.flatMap { $0.count == 3 ? $0 : nil }
            let dateTime = date.flatMap { TransactionDateTime(dateBCD: $0, timeBCD: recorded[.transactionTime]) }
            let now: @Sendable () -> TransactionDateTime
            if let dateTime { now = { dateTime } } else { now = KernelEnvironment.system.now }
            environment = KernelEnvironment(now: now, unpredictableNumber: { number })
        } else {
            environment = nil
        }
    }

    /// The recorded card time of the first `played` commands of `trace`: what a paced replay of
    /// them spends on the card's behalf.
    public static func recordedCardTime(of trace: APDUTrace, played: Int) -> Duration {
        trace.exchanges.prefix(played).reduce(.zero) { $0 + ($1.cardTime ?? .zero) }
    }
}
