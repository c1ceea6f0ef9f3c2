import DeviceStore
import Foundation
import GatewayService
import HTTPServer
import PaymentGateway
import PaymentRules
import TapToPayTesting

/// `tapemu scenarios run`: plays the catalogue against a merchant backend and grades its conclusions.
struct ScenariosRunCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "scenarios run",
        abstract: "Play the scenarios against your merchant backend and grade what it concluded against the truth.",
        arguments: [Self.names, Self.callbackUrl, Self.backendCheck, Self.settle, Self.supportWindow, Self.junit, Self.listen,
                    Self.terminals, Self.repeats]
            + RemoteGatewayOption.arguments + GatewayOptions.arguments.map { ($0 as? Option<String>)?.withHelp(
                "Where the embedded gateway keeps its ledger and the terminals their pending payments (default: a new temporary directory)") ?? $0 }
            + OutputOptions.arguments,
        discussion: """
            Each scenario (all, or the NAMEs given; `tapemu scenarios list`) is one payment on its \
            own terminal, all at once: the run creates the order at the backend (POST \
            {--backend-check}/orders), pays with the webhook going to --callback-url, tells the \
            backend what the SDK told the app (POST …/orders/{orderId}/app-result), then asks \
            GET …/orders/{orderId} until it is not pending or --settle has passed, and grades that \
            conclusion against the truth: paid where nothing was charged, not_paid where a charge \
            holds, a second charge, or pending where the seed's steps reach an answer fail, each \
            with the step that was missed. Without --gateway the embedded gateway is served on \
            --listen for the backend (its MONEI REST, GraphQL and webhooks) and announced to it \
            with PUT …/tapemu/gateway {url, apiKey}. The contract is in docs/SCENARIOS.md.
            """,
        exitCodes: [(ExitCode.failure, "a scenario failed (the table says which and why)")] + GatewayOptions.creatingExitCodes
            + [(ExitCode.unavailable, "the gateway cannot be served or reached")])

    static let names = Positional("<name>", help: "A scenario to run (default: all).", required: false, repeats: true)
    static let callbackUrl = Option<String>("--callback-url", value: "<url>", help: "The backend's webhook URL (each payment's callbackUrl).",
                                            required: true)
    static let backendCheck = Option<String>(
        "--backend-check", value: "<url>", help: "The base URL of the backend's scenario contract (/orders…).", required: true) {
        text, name throws(UsageError) in
        guard text.hasPrefix("http://") || text.hasPrefix("https://") else { throw UsageError("\(name) must be an http:// or https:// URL") }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }
    static let settle = Option<Duration>.duration(
        "--settle", help: "How long the backend may take to reach its conclusion (default 10s).", positive: true)
    static let supportWindow = Option<Duration>.duration(
        "--support-window",
        help: "Support's settle window (seed 000 step 4, GET /support/v1/orders/{orderId}): the embedded gateway's (default 3s); with --gateway, its --support-settle-window (default 60s). After outcomeUnknown with nothing charged, pending fails once it has passed.")
    static let junit = Option<String>("--junit", value: "<file>", help: "Also write the grades as JUnit XML to this file.")
    static let listen = GatewayServeCommand.listen.withHelp(
        "Where the embedded gateway is served for the backend (default 127.0.0.1:0, a free port).")

    static let terminals = Option<Int>.integer(
        "--terminals", value: "<n>", help: "A load run: N terminals at once, each playing the scenarios --repeat times in turn (default: each scenario on its own terminal, once).",
        in: 1...1024)
    static let repeats = Option<Int>.integer(
        "--repeat", value: "<k>", help: "How many times each terminal plays the scenarios (default 1).", in: 1...100_000)

    var names: [String]
    var terminalCount: Int?
    var repeatCount: Int
    var callbackUrl: String
    var backendCheck: String
    var settle: Duration
    var supportWindow: Duration?
    var junit: String?
    var listen: GatewayServeCommand.ListenAddress
    var remote: RemoteGatewayOption
    var dataDir: String?
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        remote = try RemoteGatewayOption(arguments: &arguments)
        dataDir = try arguments.value(GatewayOptions.dataDir)
        callbackUrl = try arguments.required(Self.callbackUrl)
        backendCheck = try arguments.required(Self.backendCheck)
        settle = try arguments.value(Self.settle, default: .seconds(10))
        supportWindow = try arguments.value(Self.supportWindow)
        junit = try arguments.value(Self.junit)
        listen = try arguments.value(Self.listen, default: .init(host: "127.0.0.1", port: 0))
        terminalCount = try arguments.value(Self.terminals)
        repeatCount = try arguments.value(Self.repeats, default: 1)
        names = arguments.remainingPositionals()
        try arguments.finish()
    }

    func validate() throws(UsageError) {
        for name in names where ScenarioCatalogue.named(name) == nil {
            throw UsageError("unknown scenario '\(name)' (tapemu scenarios list)")
        }
        guard CallbackURL.isValid(callbackUrl) else { throw UsageError("--callback-url must be an http:// or https:// URL") }
    }

    func run(_ console: Console) async throws -> Int32 {
        let scenarios = names.isEmpty ? ScenarioCatalogue.all : names.compactMap(ScenarioCatalogue.named)
        let directory = dataDir ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("tapemu-scenarios-\(UUID().uuidString.prefix(8))").path
        let local = GatewayOptions(dataDirectory: directory)
        let backend = MerchantBackendClient(baseURL: backendCheck)
        let store = try local.openPendingStore(.create)
        let runId = "sc-\(UUID().uuidString.prefix(8).lowercased())"

        var server: HTTPServer?
        var apiKey: String? = remote.apiKey
        var delivery: Task<Void, Never>?
        let player: ScenarioPlayer
        var withoutTestControls: String?
        if let url = remote.url {
            let gw = RemoteGateway(baseURL: url, requestTimeout: .seconds(30), caCertificateFile: remote.caFile)
            // The --api-key is the run's one credential: each terminal's token comes from the
            // gateway's POST /v1/pos/auth-token with it, for the terminal's own point of sale.
            player = ScenarioPlayer(gateway: gw, issueToken: Self.servedTokens(gw, apiKey: remote.apiKey),
                                    pendingStore: store, callbackUrl: callbackUrl, coreGateway: gw)
            if scenarios.contains(where: \.needsTestControls) {
                withoutTestControls = await Self.prepareTestControls(gw, apiKey: remote.apiKey)
                if let withoutTestControls { console.printError("tapemu: \(withoutTestControls)") }
            }
        } else {
            let embedded: EmbeddedGateway
            do {
                embedded = try EmbeddedGateway(configuration: .init(
                    dataDirectory: directory, blockedSDKVersions: [ScenarioPlayer.blockedSDKVersion], access: .create))
            } catch {
                throw local.failure(error, doing: "cannot open the gateway ledger")
            }
            let service: GatewayService
            do throws(GatewayError) {
                service = try GatewayService(gateway: embedded, supportSettleWindow: supportWindow ?? .seconds(3))
            } catch {
                throw local.failure(error, doing: "cannot open the gateway ledger")
            }
            do {
                server = try HTTPServer(configuration: HTTPServerConfiguration(host: listen.host, port: listen.port),
                                        handler: GatewayServeCommand.makeHandler(service, listenHost: listen.host))
            } catch {
                throw CommandFailure.unavailable("cannot serve the embedded gateway: \(error.reason)")
            }
            let deliverer = service.makeWebhookDeliverer(pollInterval: .milliseconds(50))
            delivery = Task { await service.runWebhookDelivery(deliverer) }
            let url = server!.url
            apiKey = service.apiKey
            console.printError("tapemu: embedded gateway served at \(url) (data in \(directory))")
            do {
                try await backend.announceGateway(url: url, apiKey: service.apiKey)
            } catch {
                await server?.stop()
                delivery?.cancel()
                throw CommandFailure.unavailable("the backend refused the gateway: \(error)")
            }
            player = ScenarioPlayer(gateway: embedded, issueToken: { t in
                embedded.issueToken(accountId: t.accountId, ttl: t.expired ? .zero : .seconds(3600), pointOfSaleId: t.pointOfSaleId)
            }, pendingStore: store, callbackUrl: callbackUrl,
               coreGateway: RemoteGateway(baseURL: url, requestTimeout: .seconds(30)))
        }
        // The webhook relay: each payment's callbackUrl, forwarding to --callback-url as its cross says.
        let relayHandler = WebhookRelay(target: callbackUrl)
        let relay: HTTPServer
        do {
            relay = try HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0),
                                   handler: relayHandler)
        } catch {
            await server?.stop()
            delivery?.cancel()
            throw CommandFailure.unavailable("cannot serve the webhook relay: \(error.reason)")
        }
        let runner = ScenarioRunner(player: player, backend: backend, settle: settle, withoutTestControls: withoutTestControls,
                                    runId: runId, apiKey: apiKey, callbackUrl: callbackUrl, relayURL: relay.url, relay: relayHandler,
                                    supportWindow: supportWindow ?? (remote.url == nil ? .seconds(3) : .seconds(60)))
        let grades = await Self.play(scenarios, runner: runner, terminals: terminalCount, repeats: repeatCount)
        if let server { await server.stop() }
        await relay.stop()
        delivery?.cancel()
        await delivery?.value

        if let junit {
            do {
                try ScenarioReport.junit(grades).write(toFile: junit, atomically: true, encoding: .utf8)
            } catch {
                throw CommandFailure.ioError("cannot write \(junit): \(error.localizedDescription)")
            }
        }
        if output.json {
            try JSONOutput.print(ScenarioReport.json(grades), to: console)
        } else {
            let lines = terminalCount == nil && repeatCount == 1 ? ScenarioReport.table(grades) : ScenarioReport.summary(grades)
            for line in lines { console.print(line) }
        }
        return grades.allSatisfy { $0.passed || $0.skipped != nil } ? ExitCode.success : ExitCode.failure
    }
}

extension ScenariosRunCommand {
    /// A served gateway's tokens: the merchant's one account (the --api-key's), each terminal its
    /// own point of sale (MONEI's POS auth token), so a terminal sees and reverses only its own
    /// orders. An expired token, or one of the payment's own account (its terms not accepted
    /// yet), comes from the gateway's test controls (`gateway serve --test-controls`).
    static func servedTokens(_ gateway: RemoteGateway, apiKey: String?)
        -> @Sendable (ScenarioPlayer.TokenRequest) async throws -> String {
        { t in
            guard let apiKey else {
                throw CommandFailure.usage("--gateway needs the merchant API key (--api-key KEY, printed by `tapemu gateway serve`)")
            }
            do {
                if t.expired || t.needsOwnAccount {
                    return try await gateway.testToken(apiKey: apiKey, pointOfSaleId: t.pointOfSaleId,
                                                       accountId: t.needsOwnAccount ? t.accountId : nil, expired: t.expired)
                }
                return try await gateway.posAuthToken(apiKey: apiKey, pointOfSaleId: t.pointOfSaleId)
            } catch {
                throw ScenarioRunError("cannot get a token for terminal \(t.pointOfSaleId) from \(gateway.baseURL): \(error)")
            }
        }
    }

    /// Readies a served gateway for the scenarios that need its test controls
    /// (``Scenario/needsTestControls``): blocks ``ScenarioPlayer/blockedSDKVersion`` there. Returns
    /// why they are skipped when the gateway has no test controls (or the run no API key); nil
    /// when they are played — any other failure here is left to show in their grades.
    static func prepareTestControls(_ gateway: RemoteGateway, apiKey: String?) async -> String? {
        let played = "tokenExpired, termsDeclined and sdkUpgradeRequired"
        guard let apiKey else { return "--gateway without --api-key: the scenarios of \(played) need the gateway's test controls, which take the API key" }
        do {
            try await gateway.blockSDKVersion(ScenarioPlayer.blockedSDKVersion, apiKey: apiKey)
        } catch where error.code == .testControlsOff {
            return "the gateway's test controls are off: the scenarios of \(played) are skipped (serve it with `tapemu gateway serve --test-controls` to play them)"
        } catch {
            return nil
        }
        return nil
    }

    /// Plays every scenario: each on its own terminal, all at once (`terminals` nil), or on
    /// `terminals` terminals at once, each playing them `repeats` times in turn. A progress bar
    /// on stderr when it is a terminal. Grades come back in a stable order (terminal, repetition,
    /// catalogue).
    static func play(_ scenarios: [Scenario], runner: ScenarioRunner, terminals: Int?, repeats: Int) async -> [ScenarioGrade] {
        let lanes: [[(Int, Int, Scenario)]]
        if let terminals {
            lanes = (1...terminals).map { t in (1...repeats).flatMap { r in scenarios.map { (t, r, $0) } } }
        } else {
            lanes = scenarios.enumerated().map { i, s in (1...repeats).map { r in (i + 1, r, s) } }
        }
        let progress = SharedProgress(BenchProgress(total: lanes.reduce(0) { $0 + $1.count }, label: "scenarios"))
        let indexed = await withTaskGroup(of: [(Int, ScenarioGrade)].self) { group in
            var offset = 0
            for lane in lanes {
                let base = offset
                offset += lane.count
                group.addTask {
                    var out = [(Int, ScenarioGrade)]()
                    for (i, (t, r, s)) in lane.enumerated() {
                        out.append((base + i, await runner.run(s, repetition: r, terminal: t)))
                        progress.advance()
                    }
                    return out
                }
            }
            var all = [(Int, ScenarioGrade)]()
            for await part in group { all += part }
            return all
        }
        progress.finish()
        return indexed.sorted { $0.0 < $1.0 }.map(\.1)
    }
}

/// ``BenchProgress`` advanced from several terminals' tasks, one at a time.
final class SharedProgress: @unchecked Sendable {
    private let lock = NSLock()
    private let bar: BenchProgress
    init(_ bar: BenchProgress) { self.bar = bar }
    func advance() { lock.withLock { bar.advance() } }
    func finish() { lock.withLock { bar.finish() } }
}
