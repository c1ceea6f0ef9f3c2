public import GatewayGraphQL
public import HTTPServer
public import PaymentGateway

/// Every handler of this module over one ledger, for a router to mount in one place:
///
/// | path | handler |
/// |---|---|
/// | `/graphql` (GET, POST) | ``GraphQLHandler`` — `Authorization: <api key>` when `apiKey` is set |
/// | `/`, `/dashboard`, `/dashboard/…` (GET; POST for its actions) | ``DashboardHandler`` — the page, its JSON, CSV and actions |
///
/// ``serves(path:)`` says which paths are these; ``handle(_:)`` answers them (404 for others).
public struct GatewayWebRoutes: HTTPHandler {
    public let graphql: GraphQLHandler
    public let dashboard: DashboardHandler

    /// `indexingLag`: hide sales younger than this from `charges` and the dashboard (a fault
    /// on demand, ``IndexingLag``); nil shows every sale at once.
    /// `gateway`: what the dashboard's refund and reverse buttons call (nil: a read-only dashboard).
    public init(ledger: any LedgerStore, apiKey: String? = nil, indexingLag: Duration? = nil, gateway: (any Gateway)? = nil) {
        let ledgerSource = LedgerChargeDataSource(ledger: ledger)
        let source: any DashboardDataSource = indexingLag.map { IndexingLag(ledgerSource, lag: $0) } ?? ledgerSource
        graphql = GraphQLHandler(service: GraphQLService(source: source), apiKey: apiKey)
        dashboard = DashboardHandler(source: source, gateway: gateway)
    }

    public static func serves(path: String) -> Bool {
        path == "/graphql" || DashboardHandler.handles(path: path)
    }

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        if request.path == "/graphql" { return await graphql.handle(request) }
        if DashboardHandler.handles(path: request.path) { return await dashboard.handle(request) }
        return JSONResponse.error(404, code: "notFound", "no such path", requestId: request.requestId)
    }
}
