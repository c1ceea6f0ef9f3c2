// swift-tools-version:6.0
// tapemu — the Tap-to-Pay payment stack, emulated on Linux.
// Layers (DESIGN.md), top to bottom: tapemu CLI → TapToPay → PaymentGateway / EMVKernel →
// CardChannel (+ PCSC) → VirtualCard → ISO7816 / BERTLV → C shims.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "tapemu",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tapemu", targets: ["tapemu"]),
        .library(name: "TapToPay", targets: ["TapToPay"]),
        .library(name: "EMVKernel", targets: ["EMVKernel"]),
        // For `scripts/dev fuzz` only: one archive of the harnesses and every module they reach.
        .library(name: "FuzzTargets", type: .static, targets: ["FuzzTargets"]),
    ],
    targets: [
        // C libraries from Debian, through pkg-config. One Swift module imports each.
        .systemLibrary(name: "CPCSCLite", pkgConfig: "libpcsclite",
                       providers: [.apt(["libpcsclite-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd",
                       providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"])]),

        // Bytes.
        .target(name: "ISO7816", swiftSettings: swiftSettings),
        .target(name: "BERTLV", swiftSettings: swiftSettings),
        // Emulated EMV cards (pure: bytes in, bytes out) and the crypto they share with the issuer.
        .target(name: "VirtualCard", dependencies: ["ISO7816", "BERTLV", "COpenSSL"],
                swiftSettings: swiftSettings),
        // One channel protocol, its backends (virtual card, trace replay, recorder), and the
        // GET RESPONSE / resend-with-Le logic in one place.
        .target(name: "CardChannel", dependencies: ["ISO7816", "BERTLV", "VirtualCard"],
                swiftSettings: swiftSettings),
        // The only module that imports libpcsclite.
        .target(name: "PCSC", dependencies: ["CPCSCLite", "CardChannel", "ISO7816", "VirtualCard"],
                swiftSettings: swiftSettings),
        .target(name: "EMVKernel", dependencies: ["ISO7816", "BERTLV", "CardChannel"],
                swiftSettings: swiftSettings),
        .target(name: "PaymentGateway", dependencies: ["CSQLite", "BERTLV", "VirtualCard"],
                swiftSettings: swiftSettings),
        .target(name: "TapToPay",
                dependencies: ["EMVKernel", "PaymentGateway", "CardChannel", "BERTLV", "ISO7816"],
                swiftSettings: swiftSettings),
        // HTTP messages and the server (the only module that imports libmicrohttpd).
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD"], swiftSettings: swiftSettings),
        // The async HTTP client (the only module that imports libcurl).
        .target(name: "HTTPClient", dependencies: ["CCurl"], swiftSettings: swiftSettings),
        // A GraphQL lexer, parser, validator and executor (pure Swift), and the gateway's
        // `charges` schema over it (no server library: the fuzz harness links it).
        .target(name: "GraphQL", swiftSettings: swiftSettings),
        .target(name: "GatewayGraphQL", dependencies: ["GraphQL", "PaymentGateway"], swiftSettings: swiftSettings),
        // The gateway's web handlers: /graphql and the dashboard.
        .target(name: "GatewayWeb", dependencies: ["HTTPServer", "GraphQL", "GatewayGraphQL", "PaymentGateway"],
                swiftSettings: swiftSettings),
        // The gateway as a network service (router, terminal API, merchant REST, CoreAPI REST,
        // faults) and RemoteGateway, the `Gateway` that talks to it.
        .target(name: "GatewayService", dependencies: ["HTTPServer", "HTTPClient", "PaymentGateway", "BERTLV"],
                swiftSettings: swiftSettings),
        // A PostgreSQL client over libpq (the only module that imports it): parameterised
        // queries, transactions, typed errors with SQLSTATE, connections on their own threads.
        .target(name: "PostgresClient", dependencies: ["CLibPQ"], swiftSettings: swiftSettings),
        // The gateway's ledger on PostgreSQL (``LedgerStore``), shared by several gateway servers.
        .target(name: "PostgresLedger", dependencies: ["PostgresClient", "PaymentGateway"],
                swiftSettings: swiftSettings),
        .executableTarget(
            name: "tapemu",
            dependencies: ["TapToPay", "EMVKernel", "PaymentGateway", "CardChannel", "PCSC",
                           "VirtualCard", "BERTLV", "ISO7816", "GatewayService", "PostgresLedger"],
            swiftSettings: swiftSettings),
        // The benchmark's baseline: a plain C SCardTransmit loop (no Swift module but PCSC imports
        // libpcsclite).
        .target(name: "CPCSCBaseline", dependencies: ["CPCSCLite"]),
        .executableTarget(
            name: "tapemu-bench",
            dependencies: ["EMVKernel", "CardChannel", "VirtualCard", "PCSC", "BERTLV", "ISO7816", "CPCSCBaseline"],
            swiftSettings: swiftSettings),
        // Durable authorisations per second over HTTP, beside the embedded gateway and a raw
        // durable SQLite commit loop (prints figures, asserts nothing).
        .executableTarget(name: "tapemu-gateway-bench",
                          dependencies: ["GatewayService", "HTTPServer", "HTTPClient", "PaymentGateway", "BERTLV",
                                         "PostgresClient"],
                          swiftSettings: swiftSettings),
        // Fuzzing: each harness's one-input function, shared by the libFuzzer build (`scripts/dev
        // fuzz` compiles Fuzz/Main against these modules with -sanitize=fuzzer) and the regression
        // tests. Built and tested like any target: no fuzzing flags here.
        .target(name: "FuzzTargets",
                dependencies: ["BERTLV", "ISO7816", "CardChannel", "VirtualCard", "EMVKernel", "PaymentGateway",
                               "GraphQL", "GatewayGraphQL"],
                path: "Fuzz/FuzzTargets", swiftSettings: swiftSettings),

        .testTarget(name: "ISO7816Tests", dependencies: ["ISO7816"], swiftSettings: swiftSettings),
        .testTarget(name: "BERTLVTests", dependencies: ["BERTLV"], swiftSettings: swiftSettings),
        .testTarget(name: "VirtualCardTests", dependencies: ["VirtualCard", "ISO7816", "BERTLV"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "CardChannelTests",
                    dependencies: ["CardChannel", "VirtualCard", "ISO7816", "EMVKernel"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "PCSCTests", dependencies: ["PCSC", "CardChannel", "VirtualCard", "ISO7816", "EMVKernel"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EMVKernelTests",
                    dependencies: ["EMVKernel", "CardChannel", "VirtualCard", "BERTLV", "ISO7816"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "PaymentGatewayTests", dependencies: ["PaymentGateway", "VirtualCard", "CardChannel"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "TapemuCLITests", dependencies: ["tapemu", "PaymentGateway", "VirtualCard", "CardChannel"],
                    swiftSettings: swiftSettings),
        // Every input that once broke a harness (Fuzz/regressions/) and every seed (Fuzz/corpus/).
        .testTarget(name: "FuzzRegressionTests", dependencies: ["FuzzTargets"], swiftSettings: swiftSettings),
        .testTarget(name: "GatewayServiceTests",
                    dependencies: ["GatewayService", "HTTPServer", "HTTPClient", "PaymentGateway", "TapToPay", "BERTLV",
                                   "VirtualCard", "CardChannel", "EMVKernel", "tapemu"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "GraphQLTests", dependencies: ["GraphQL"], swiftSettings: swiftSettings),
        // PostgreSQL: the client, the ledger contract on both backends, several servers on one
        // ledger (needs TAPEMU_TEST_POSTGRES; `scripts/dev test` starts a private cluster).
        .testTarget(name: "PostgresLedgerTests",
                    dependencies: ["PostgresClient", "PostgresLedger", "PaymentGateway", "GatewayService", "HTTPServer",
                                   "HTTPClient", "BERTLV", "tapemu"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "GatewayWebTests",
                    dependencies: ["GatewayWeb", "GatewayGraphQL", "GraphQL", "HTTPServer", "PaymentGateway", "BERTLV"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "TapToPayTests",
                    dependencies: ["TapToPay", "PaymentGateway", "EMVKernel", "CardChannel", "VirtualCard"],
                    swiftSettings: swiftSettings),
    ]
)
