import Foundation
import GatewayService
import PaymentGateway

/// `tapemu gateway token`: a token for `prepare(token:)` signed by the embedded gateway, or
/// from a served one (`--gateway URL --api-key KEY`: `POST /v1/pos/auth-token`, as a merchant's
/// backend gets one).
struct GatewayTokenCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway token",
        abstract: "Issue a token for prepare(token:) from the embedded gateway, or from a served one with the API key.",
        arguments: [Self.account, Self.live, Self.ttl, Self.pointOfSale] + RemoteGatewayOption.arguments
            + GatewayOptions.arguments + OutputOptions.arguments,
        discussion: """
            Prints the token: a terminal's credential for the gateway's terminal and CoreAPI \
            routes, which act on that terminal's (--point-of-sale's) own orders only. With \
            --gateway URL --api-key KEY the served gateway issues it (POST /v1/pos/auth-token, \
            valid 24 hours, for its account; --account, --live and --ttl are the embedded \
            gateway's). With --json: `token`, `accountId`, `mode` (test or live), `issuedAt`, \
            `expiresAt` (ISO 8601), `tokenId` and `pointOfSaleId`.
            """,
        exitCodes: GatewayOptions.exitCodes + [
            (ExitCode.unavailable, "the --gateway cannot be reached or refused the API key"),
            (ExitCode.usage, "--gateway without --api-key"),
        ])

    static let account = Option<String>("--account", value: "<id>", help: "The merchant account (default acct_tapemu_test).")
    static let live = Flag("--live", help: "A live-mode token (default test).")
    static let ttl = Option<Duration>(names: ["--ttl"], valueName: "<duration>", help: "How long it stays valid (default 1h).",
                                      required: false) { text, name throws(UsageError) in
        let ttl = try Parse.duration(text, option: name)
        guard ttl > .zero else { throw UsageError("--ttl must be more than 0 (a token of 0s is expired when issued)") }
        return ttl
    }

    static let pointOfSale = Option<String>(
        "--point-of-sale", value: "<id>",
        help: "The terminal the token is for (MONEI's pointOfSaleId; default tapemu-cli, the one pay, sale, resolve and charges use).")

    var account: String
    var pointOfSaleId: String
    var remote: RemoteGatewayOption
    var live: Bool
    var ttl: Duration
    var gateway: GatewayOptions
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        gateway = try GatewayOptions(arguments: &arguments)
        remote = try RemoteGatewayOption(arguments: &arguments)
        pointOfSaleId = try arguments.value(Self.pointOfSale, default: RemoteGatewayOption.pointOfSaleId)
        account = try arguments.value(Self.account, default: GatewayService.defaultAccountId)
        live = arguments.isSet(Self.live)
        ttl = try arguments.value(Self.ttl, default: .seconds(3600))
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        if let url = remote.url {
            guard let apiKey = remote.apiKey else {
                throw CommandFailure.usage("--gateway needs the merchant API key (--api-key KEY, printed by `tapemu gateway serve`)")
            }
            let served = RemoteGateway(baseURL: url, caCertificateFile: remote.caFile)
            let token: String, validation: TokenValidation
            do {
                token = try await served.posAuthToken(apiKey: apiKey, pointOfSaleId: pointOfSaleId)
                validation = try await served.validateToken(token)
            } catch {
                throw CommandFailure.unavailable("cannot get a token from \(served.baseURL): \(error)")
            }
            return try print(token, validation, console)
        }
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
        let token = gw.issueToken(accountId: account, mode: live ? .live : .test, ttl: ttl, pointOfSaleId: pointOfSaleId)
        return try print(token, try await gw.validateToken(token), console)
    }

    private func print(_ token: String, _ validation: TokenValidation, _ console: Console) throws -> Int32 {
        guard output.json else {
            console.print(token)
            return ExitCode.success
        }
        // The claims as the gateway reads them back: what prepare(token:) will see.
        guard case .valid(let claims) = validation else {
            throw CommandFailure.software("the gateway does not accept the token it just issued")
        }
        let iso = Date.ISO8601FormatStyle()
        try JSONOutput.print(JSONValue.object([
            "token": .string(token), "accountId": .string(claims.accountId), "mode": .string(claims.mode.rawValue),
            "issuedAt": .string(claims.issuedAt.formatted(iso)), "expiresAt": .string(claims.expiresAt.formatted(iso)),
            "tokenId": .string(claims.tokenId), "pointOfSaleId": claims.pointOfSaleId.map { .string($0) } ?? .null,
        ]), to: console)
        return ExitCode.success
    }
}
