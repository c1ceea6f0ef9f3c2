import DeviceStore
import Foundation
import GatewayService
import PaymentGateway
import TapToPay
public import Storage

/// Options for the embedded gateway shared by `pay`, `charges`, `sale`, `pending`, `resolve` and
/// `gateway`, and the one rule for opening a data directory from the command line:
///
/// - only the commands that make payments (`pay`, `sale`) create a data directory or a store;
/// - every other command needs the directory (exit 66 "no data in DIR" when it does not exist),
///   and a query opens its stores read only, so it works on a read-only or full disk;
/// - a store the directory held that is missing, empty, foreign or damaged is exit 74, naming
///   the file and what to do (never a fresh empty store).
struct GatewayOptions: Sendable {
    /// `--data-dir`: where the ledger and the device's pending payments live.
    var dataDirectory: String

    static let dataDir = Option<String>.nonEmpty(
        "--data-dir", value: "<dir>",
        help: "Where the embedded gateway keeps its ledger and the device its pending payments (default $XDG_DATA_HOME/tapemu, else ~/.local/share/tapemu).",
        ifEmpty: "needs a directory path").environment(TapToPay.dataDirectoryEnvironmentVariable)
    static let arguments: [any CommandArgument] = [dataDir]

    /// What opening the data directory can end with, for the commands that do not create it.
    static let exitCodes: [(code: Int32, meaning: String)] = [
        (ExitCode.noInput, "the --data-dir does not exist (only pay and sale create one)"),
    ] + creatingExitCodes

    /// What opening the data directory can end with, for `pay` and `sale` (which create it).
    static let creatingExitCodes: [(code: Int32, meaning: String)] = [
        (ExitCode.ioError, "a store in --data-dir is missing, empty, damaged or not this directory's, or cannot be written (read-only or full disk)"),
    ]

    /// The statuses of a card source given by file (`--trace`, `--card FILE`).
    static let cardFileExitCodes: [(code: Int32, meaning: String)] = [
        (ExitCode.dataError, "the --trace or --card file is not valid"),
        (ExitCode.noInput, "the --trace or --card file does not exist"),
        (ExitCode.ioError, "the --trace or --card file cannot be read"),
    ]

    init(arguments: inout Arguments) throws(UsageError) {
        dataDirectory = try arguments.value(Self.dataDir) ?? DataDirectory.defaultPath()
        guard !dataDirectory.isEmpty else { throw UsageError("--data-dir needs a directory path") }
    }

    /// The exit status (``ExitCode/of(_:)-gateway``) and message for a ledger that cannot be
    /// opened or written.
    func failure(_ error: GatewayError, doing: String) -> CommandFailure {
        failure(ExitCode.of(error), reason: error.reason, doing: doing)
    }

    /// The exit status (``ExitCode/of(_:)-devicestore``) and message for a device store that
    /// cannot be opened, read or written: the same statuses and words as for the ledger.
    func failure(_ error: DeviceStoreError, doing: String) -> CommandFailure {
        failure(ExitCode.of(error), reason: error.reason, doing: doing)
    }

    private func failure(_ status: Int32, reason: String, doing: String) -> CommandFailure {
        status == ExitCode.noInput ? .noInput("\(reason) (the --data-dir `tapemu pay` or `tapemu sale` used?)")
            : CommandFailure(exitCode: status, "\(doing) in \(dataDirectory): \(reason)")
    }

    /// How a recovery's line names the attempt: its amount and card, or that they cannot be read
    /// (an unreadable record's placeholder has no currency, and its amount of 0 was never asked).
    static func attemptSummary(amount: Int, currency: String, maskedPAN: String?) -> String {
        currency.isEmpty ? "amount and card unreadable" : "\(amount) \(currency), \(maskedPAN ?? "card unknown")"
    }

    /// What ``handOver(_:console:)`` did.
    enum HandOver: Equatable {
        /// Every record left the device.
        case done
        /// Some stay for a later run because another process held an attempt of the same sale at
        /// that moment (``DeviceStoreError/Code/busy``): not now, try again later (75).
        case kept
        /// Stdout failed, or a record could not be removed (74).
        case failed
    }

    /// A result or a recovery's report is on stdout: the records it resolved leave the device
    /// now, not before (a process killed earlier, or with a dead stdout, leaves them for the next
    /// recovery). A record that could not be removed stays (said on stderr).
    @discardableResult
    static func handOver(_ resolved: [(orderId: String, acknowledge: () throws(DeviceStoreError) -> Void)],
                         console: Console) -> HandOver {
        guard console.outputWritten else { return .failed }
        var result = HandOver.done
        for (orderId, acknowledge) in resolved {
            do throws(DeviceStoreError) {
                try acknowledge()
            } catch {
                if error.code != .busy { result = .failed } else if result == .done { result = .kept }
                console.printError("tapemu: order \(orderId): its record could not be removed (\(error.reason)); it stays, and a later run reports it again")
            }
        }
        return result
    }

    func openGateway(_ access: DataDirectoryLayout.Access) throws -> EmbeddedGateway {
        do {
            return try EmbeddedGateway(dataDirectory: dataDirectory, access: access)
        } catch {
            throw failure(error, doing: "cannot open the gateway ledger")
        }
    }

    func openPendingStore(_ access: DataDirectoryLayout.Access) throws -> PendingPaymentStore {
        do {
            return try PendingPaymentStore(dataDirectory: dataDirectory, access: access)
        } catch {
            throw failure(error, doing: "cannot open the device's pending payments")
        }
    }
}

/// `--gateway <url>` of `pay`, `sale`, `resolve` and `charges`: the gateway service
/// (`tapemu gateway serve`) to talk to over HTTP(S) instead of the embedded ledger, with the
/// merchant API key that gets the terminal its token (`--api-key`) and the CA of an https://
/// gateway (`--cacert`). The device's pending payments stay in --data-dir either way.
struct RemoteGatewayOption: Sendable {
    var url: String?
    var apiKey: String?
    var caFile: String?

    static let gatewayURL = Option<String>(
        "--gateway", value: "<url>",
        help: "Use the gateway served at this http://HOST:PORT or https://HOST:PORT (tapemu gateway serve) instead of the embedded ledger; pending payments stay in --data-dir.") {
        text, name throws(UsageError) in
        if let problem = RemoteGateway.validate(url: text) { throw UsageError("\(name): \(problem)") }
        return text
    }.environment(TapToPay.gatewayEnvironmentVariable)
    static let apiKeyOption = Option<String>.nonEmpty(
        "--api-key", value: "<key>",
        help: "The merchant API key of the --gateway (gateway serve prints it): the terminal gets its token with it (POST /v1/pos/auth-token).",
        ifEmpty: "needs the merchant API key").environment("TAPEMU_API_KEY")
    static let cacert = Option<String>(
        "--cacert", value: "<file>",
        help: "The CA certificate(s) (PEM) an https:// --gateway's certificate must chain to (default: the system's).") {
        text, name throws(UsageError) in
        guard FileManager.default.isReadableFile(atPath: text) else { throw UsageError("\(name): cannot read \(text)") }
        return text
    }
    static let arguments: [any CommandArgument] = [gatewayURL, apiKeyOption, cacert]

    /// The point of sale the command line's tokens are for: every run asks for this one, so
    /// `resolve` and `charges` find what an earlier `pay` or `sale` sent.
    static let pointOfSaleId = "tapemu-cli"

    /// What ``token(_:accountId:)`` ends with when the --gateway cannot be reached for a token
    /// (nothing else was sent: no payment, nothing resolved), for the commands that fetch one.
    static let tokenExitCodes: [(code: Int32, meaning: String)] = [
        (ExitCode.unavailable, "the --gateway cannot be reached for a token: nothing was sent (pay, sale: no payment occurred)"),
    ]

    init(arguments: inout Arguments) throws(UsageError) {
        url = try arguments.value(Self.gatewayURL)
        apiKey = try arguments.value(Self.apiKeyOption)
        caFile = try arguments.value(Self.cacert)
        if url == nil, apiKey != nil || caFile != nil {
            throw UsageError("--api-key and --cacert are for a --gateway URL (the embedded gateway needs neither)")
        }
    }

    /// The remote gateway, else the embedded one opened from `local` with `access`.
    func open(_ local: GatewayOptions, _ access: DataDirectoryLayout.Access,
              timeout: Duration = .seconds(30)) throws -> any Gateway {
        if let url { return RemoteGateway(baseURL: url, requestTimeout: timeout, caCertificateFile: caFile) }
        return try local.openGateway(access)
    }

    /// `gw` as this terminal (a remote one sends the token on every request) and the token for
    /// `prepare(token:)`: `given` (--token), else one issued for ``pointOfSaleId`` — by the
    /// embedded gateway, or by the --gateway for the --api-key.
    func terminal(_ gw: any Gateway, token given: String?,
                  accountId: String = GatewayService.defaultAccountId) async throws -> (gateway: any Gateway, token: String) {
        if let embedded = gw as? EmbeddedGateway {
            return (embedded, given ?? embedded.issueToken(accountId: accountId, pointOfSaleId: Self.pointOfSaleId))
        }
        guard let remote = gw as? RemoteGateway else {
            guard let given else { throw CommandFailure.software("this gateway issues no tokens; give --token") }
            return (gw, given)
        }
        if let given { return (remote.with(deviceToken: given), given) }
        guard let apiKey else {
            throw CommandFailure.usage("--gateway needs the merchant API key (--api-key KEY, printed by `tapemu gateway serve`) or a terminal's --token")
        }
        do {
            let token = try await remote.posAuthToken(apiKey: apiKey, pointOfSaleId: Self.pointOfSaleId)
            return (remote.with(deviceToken: token), token)
        } catch {
            throw CommandFailure.unavailable("cannot get a token from \(remote.baseURL): \(error)")
        }
    }
}
