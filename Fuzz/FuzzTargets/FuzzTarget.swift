/// The fuzzing entry points of tapemu: one per place that takes bytes from outside (a card, a
/// file, a command line, a network peer), each a function of one input.
///
/// Both the libFuzzer build (`scripts/dev fuzz`, whose `LLVMFuzzerTestOneInput` lives in
/// `Fuzz/Main/`) and the regression tests (`Tests/FuzzRegressionTests`, which replay
/// `Fuzz/regressions/<name>/` and `Fuzz/corpus/<name>/` under a plain `swift test`) call the
/// same ``run(_:)``, so an input that once crashed a harness is proven fixed by the test suite.
///
/// A harness passes when its input is accepted or refused with a typed error. It fails by
/// trapping (what fuzzing hunts: an overflow, an index out of range, a precondition) or by
/// throwing ``FuzzFailure`` when a property that must hold for every accepted input does not
/// (a parse–write–parse round trip, a full PAN in a description, a kernel that never ends).
public struct FuzzTarget: Sendable {
    /// The name used on the command line and for the folders of its inputs: `tlv`, `kernel`, …
    public let name: String
    /// What the input is and what the harness checks, one line.
    public let summary: String
    let body: Body

    /// A harness is synchronous, except those that run the asynchronous card reader.
    public enum Body: Sendable {
        case sync(@Sendable ([UInt8]) throws(FuzzFailure) -> Void)
        case async(@Sendable ([UInt8]) async throws(FuzzFailure) -> Void)
    }

    init(_ name: String, _ summary: String, _ body: Body) {
        self.name = name
        self.summary = summary
        self.body = body
    }

    /// Runs the harness on one input.
    public func run(_ input: [UInt8]) async throws(FuzzFailure) {
        switch body {
        case .sync(let f): try f(input)
        case .async(let f): try await f(input)
        }
    }

    /// The synchronous body, when the harness has one (the fuzzer calls it without a task).
    public var synchronousBody: (@Sendable ([UInt8]) throws(FuzzFailure) -> Void)? {
        if case .sync(let f) = body { return f }
        return nil
    }

    /// Every harness, in the order `scripts/dev fuzz` runs them.
    public static let all: [FuzzTarget] = [
        FuzzTarget("tlv", "BER-TLV bytes: parsed under both rule sets, re-encoded and re-parsed, every node's value decoded",
                   .sync(ParserHarnesses.tlv)),
        FuzzTarget("dol", "a data object list: parsed, re-encoded, data built for it and split back",
                   .sync(ParserHarnesses.dol)),
        FuzzTarget("apdu", "command and response APDU bytes (and hex text): decoded, explained, re-encoded",
                   .sync(ParserHarnesses.apdu)),
        FuzzTarget("trace", "an .apdu trace file: parsed, written and re-parsed, redacted, replayed by its responder",
                   .sync(TraceHarnesses.trace)),
        FuzzTarget("pcsc-spy", "a pcsc-spy log (raw or printed): imported; the trace it makes must read back",
                   .sync(TraceHarnesses.pcscSpy)),
        FuzzTarget("proxmark3", "a Proxmark3 tracelog: imported; the trace it makes must read back",
                   .sync(TraceHarnesses.proxmark3)),
        FuzzTarget("card-profile", "a card profile (JSON): decoded, validated, re-encoded; the card it makes is read by the kernel",
                   .sync(CardHarnesses.cardProfile)),
        FuzzTarget("card", "command APDUs sent to a built-in emulated card",
                   .sync(CardHarnesses.card)),
        FuzzTarget("kernel", "a card's responses: the EMV reader (kernel + card session) reads a card that answers them",
                   .async(CardHarnesses.kernel)),
        FuzzTarget("oda-data", "a --ca-keys CA key list or a --crl revocation list: parsed; accepted keys are well formed and merge one per RID and index",
                   .sync(ODAHarness.odaData)),
        FuzzTarget("webhook", "a MONEI-Signature header line and a body: verified; a header we sign must verify",
                   .sync(WebhookHarness.webhook)),
        FuzzTarget("graphql", "a GraphQL query or a POST /graphql body: parsed, validated, run on the charges schema; the answer is JSON",
                   .sync(GraphQLHarness.graphql)),
        FuzzTarget("gateway-http", "a request to `tapemu gateway serve`'s routes (terminal, CoreAPI, merchant, admin, GraphQL, dashboard) over a real ledger",
                   .async(GatewayHTTPHarness.gatewayHTTP)),
    ]

    /// The harness called `name`.
    public static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// A property a harness checks did not hold for an input. Fuzzing turns it into a crash (so
/// libFuzzer saves the input); the regression tests record it as an issue.
public struct FuzzFailure: Error, Sendable, CustomStringConvertible {
    public var reason: String
    public var file: String
    public var line: Int

    public init(_ reason: String, file: String = #fileID, line: Int = #line) {
        self.reason = reason
        self.file = file
        self.line = line
    }

    public var description: String { "\(reason) (\(file):\(line))" }
}

/// Throws ``FuzzFailure`` with `reason` unless `condition` holds.
@inline(__always)
func expect(_ condition: Bool, _ reason: @autoclosure () -> String,
            file: String = #fileID, line: Int = #line) throws(FuzzFailure) {
    if !condition { throw FuzzFailure(reason(), file: file, line: line) }
}
