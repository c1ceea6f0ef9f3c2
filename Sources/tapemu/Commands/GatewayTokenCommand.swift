import Foundation
import PaymentGateway

/// `tapemu gateway token`: a token for `prepare(token:)` signed by the embedded gateway.
struct GatewayTokenCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway token",
        abstract: "Issue a token for prepare(token:) from the embedded gateway.",
        arguments: [Self.account, Self.live, Self.ttl] + GatewayOptions.arguments + OutputOptions.arguments,
        discussion: """
            Prints the token. With --json: `token`, `accountId`, `mode` (test or live), \
            `issuedAt`, `expiresAt` (ISO 8601) and `tokenId`.
            """,
        exitCodes: GatewayOptions.exitCodes)

    static let account = Option<String>("--account", value: "<id>", help: "The merchant account (default acct_tapemu_test).")
    static let live = Flag("--live", help: "A live-mode token (default test).")
    static let ttl = Option<Duration>(names: ["--ttl"], valueName: "<duration>", help: "How long it stays valid (default 1h).",
                                      required: false) { text, name throws(UsageError) in
        let ttl = try Parse.duration(text, option: name)
        guard ttl > .zero else { throw UsageError("--ttl must be more than 0 (a token of 0s is expired when issued)") }
        return ttl
    }

    var account: String
    var live: Bool
    var ttl: Duration
    var gateway: GatewayOptions
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        gateway = try GatewayOptions(arguments: &arguments)
        account = try arguments.value(Self.account, default: "acct_tapemu_test")
        live = arguments.isSet(Self.live)
        ttl = try arguments.value(Self.ttl, default: .seconds(3600))
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        // A token needs the ledger's secret: read it where it is (a read-only disk too); in a
        // directory without a ledger yet, make one (a token starts a payment workflow). A
        // directory that does not exist is a mistyped --data-dir (exit 66).
        guard FileManager.default.fileExists(atPath: gateway.dataDirectory) else {
            throw gateway.failure(GatewayError(.noDataDirectory, "no data in \(gateway.dataDirectory): the directory does not exist"),
                                  doing: "cannot issue a token")
        }
        let gw: EmbeddedGateway
        do {
            gw = try EmbeddedGateway(dataDirectory: gateway.dataDirectory, access: .readOnly)
        } catch where error.code == .noDataDirectory {
            gw = try gateway.openGateway(.create)
        } catch {
            throw gateway.failure(error, doing: "cannot open the gateway ledger")
        }
        let token = gw.issueToken(accountId: account, mode: live ? .live : .test, ttl: ttl)
        guard output.json else {
            console.print(token)
            return ExitCode.success
        }
        // The claims as the gateway reads them back: what prepare(token:) will see.
        guard case .valid(let claims) = try await gw.validateToken(token) else {
            throw CommandFailure(exitCode: ExitCode.software, "the gateway does not accept the token it just issued")
        }
        let iso = Date.ISO8601FormatStyle()
        try JSONOutput.print(JSONValue.object([
            "token": .string(token), "accountId": .string(claims.accountId), "mode": .string(claims.mode.rawValue),
            "issuedAt": .string(claims.issuedAt.formatted(iso)), "expiresAt": .string(claims.expiresAt.formatted(iso)),
            "tokenId": .string(claims.tokenId),
        ]), to: console)
        return ExitCode.success
    }
}
