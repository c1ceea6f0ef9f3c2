// swift-tools-version:6.0
// tapemu — the Tap-to-Pay payment stack, emulated on Linux.
// Layers (docs/ARCHITECTURE.md has the exact graph), top to bottom: tapemu CLI → TapToPay / CoreAPI → PaymentFlow →
// PaymentGateway / EMVKernel → PCSC / VirtualCard / APDUTrace → CardChannel → Timing, ISO7816 / BERTLV → C shims.
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
        .library(name: "CoreAPI", targets: ["CoreAPI"]),
        // The scenario catalogue for a team's own Swift tests: a TapToPay whose next payment meets a scenario.
        .library(name: "TapToPayTesting", targets: ["TapToPayTesting"]),
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
        // libedit's readline interface: the prompt of `tapemu transmit --interactive`.
        .systemLibrary(name: "CLibEdit", pkgConfig: "libedit",
                       providers: [.apt(["libedit-dev"])]),

        // The one shape of every layer's error (after swift-asn1's ASN1Error): a code compared by
        // value, a reason never compared, the source location kept (no dependencies).
        .target(name: "CodedErrors", swiftSettings: swiftSettings),
        // Bytes.
        .target(name: "ISO7816", dependencies: ["CodedErrors"], swiftSettings: swiftSettings),
        // The EMV tag dictionary as data (EMVTags.tsv), compiled in and read once.
        .target(name: "BERTLV", dependencies: ["CodedErrors"], resources: [.embedInCode("EMVTags.tsv")],
                swiftSettings: swiftSettings),
        // Card-network rules: brands and their RID and PAN-range tables (PaymentNetwork), the
        // PAN and track 2, what is sensitive and how it is masked (SensitiveData), amounts,
        // currency and country codes, and a payment request's rules (amount, currency, order id,
        // callback URL) that both SDK faces and the gateway check.
        .target(name: "PaymentRules", dependencies: ["BERTLV", "ISO7816"], swiftSettings: swiftSettings),
        // EMV values decoded for people (amounts, dates, bit fields by name, CVM lists, DOLs).
        .target(name: "EMVDisplay", dependencies: ["BERTLV", "PaymentRules"], swiftSettings: swiftSettings),
        // One clock type, deadlines, the one resume-once primitive (no dependencies).
        .target(name: "Timing", swiftSettings: swiftSettings),
        // Storage: the SQLite wrapper (the only module that imports libsqlite3), file locks, the
        // data directory and its manifest. The gateway's ledger and the device's store use it,
        // each seeing its failures in its own error type.
        .target(name: "Storage", dependencies: ["CSQLite", "Timing", "CodedErrors"], swiftSettings: swiftSettings),
        // The one strict JSON reader (duplicate keys, integer amounts, valid numbers) and a
        // Decoder over it: every request body, card profile and webhook body is read with it.
        .target(name: "StrictJSON", swiftSettings: swiftSettings),
        // The channel: one protocol, the session (timing, deadlines, GET RESPONSE / resend-with-Le
        // in one place), its errors, and the card-side responder every in-process card plays through.
        .target(name: "CardChannel", dependencies: ["ISO7816", "Timing", "CodedErrors"], swiftSettings: swiftSettings),
        // The trace library: format, parser/writer, matching, redaction, recorder, importers,
        // the trace's card side (in process and for vpcd).
        .target(name: "APDUTrace", dependencies: ["CardChannel", "ISO7816", "BERTLV", "Timing", "PaymentRules", "CodedErrors"],
                swiftSettings: swiftSettings),
        // Emulated EMV cards (pure: bytes in, bytes out), their channel, and the crypto they share
        // with the issuer.
        .target(name: "VirtualCard", dependencies: ["ISO7816", "BERTLV", "Cryptography", "CardChannel", "Timing", "StrictJSON", "PaymentRules", "CodedErrors"],
                // The base profiles, as the JSON a user profile file holds, compiled in (no bundle).
                resources: ["visa-qvsdc", "mastercard-mchip", "amex", "maestro", "girocard"].map { .embedInCode("Profiles/\($0).json") },
                swiftSettings: swiftSettings),
        // A virtual card behind vsmartcard-vpcd (`tapemu emulate`): vpcd's wire protocol over
        // TCP, no PC/SC call.
        .target(name: "VPCD", dependencies: ["CardChannel", "Timing"], swiftSettings: swiftSettings),
        // The only module that imports libpcsclite.
        .target(name: "PCSC", dependencies: ["CPCSCLite", "CardChannel", "ISO7816", "Timing", "CodedErrors"],
                swiftSettings: swiftSettings),
        // The one module that imports libcrypto: hashes, MACs, ciphers, RSA (raw modexp) for the
        // virtual cards, the gateway and the kernel's offline data authentication.
        .target(name: "Cryptography", dependencies: ["COpenSSL"], swiftSettings: swiftSettings),
        .target(name: "EMVKernel", dependencies: ["ISO7816", "BERTLV", "CardChannel", "Timing", "Cryptography", "PaymentRules", "CodedErrors"],
                swiftSettings: swiftSettings), // the contactless kernel: no I/O, no benchmark code
        // Read timings for `tapemu bench` and tapemu-bench: exchange kinds, the on-air floor,
        // percentiles, replay set-up.
        .target(name: "BenchTiming", dependencies: ["EMVKernel", "CardChannel", "APDUTrace", "ISO7816", "BERTLV", "PaymentRules"],
                swiftSettings: swiftSettings),
        // The emulated acquirer. VirtualCard: it is also the issuer host of the virtual cards and
        // verifies their cryptograms with the keys they were made with (IssuerKeys.swift alone).
        .target(name: "PaymentGateway", dependencies: ["Storage", "Cryptography", "BERTLV", "VirtualCard", "Timing", "PaymentRules", "CodedErrors"],
                swiftSettings: swiftSettings),
        // The device's durable store of pending payments (leases, recovery lock), on Storage as
        // the ledger is; the gateway's answer a record keeps is its own value (no gateway here).
        .target(name: "DeviceStore", dependencies: ["Storage", "BERTLV", "PaymentRules", "CodedErrors"], swiftSettings: swiftSettings),
        // The payment flow both SDK faces run: the configuration, the engine (card, kernel, the
        // pending record durable before the request leaves, the authorisation), one payment at a
        // time, the hand-over step, timeouts and providers.
        .target(name: "PaymentFlow",
                dependencies: ["EMVKernel", "PaymentGateway", "DeviceStore", "CardChannel", "Timing", "PaymentRules"],
                swiftSettings: swiftSettings),
        // The MONEI-style face (seed 000). GatewayService and VirtualCard: the shared instance of
        // the seed's static API (TapToPay.acceptPayment) reads a virtual card and, with
        // TAPEMU_GATEWAY, a served gateway.
        .target(name: "TapToPay",
                dependencies: ["PaymentFlow", "PaymentGateway", "DeviceStore", "GatewayService", "VirtualCard", "Storage"],
                swiftSettings: swiftSettings),
        // The CoreAPI-style face (seeds 002/003): listeners, RestConnector, the pending sales'
        // recovery. It does not import the MONEI face.
        .target(name: "CoreAPI",
                dependencies: ["PaymentFlow", "PaymentGateway", "DeviceStore", "CardChannel", "PaymentRules"],
                swiftSettings: swiftSettings),
        // HTTP messages and the server (the only module that imports libmicrohttpd).
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "Timing"], swiftSettings: swiftSettings),
        // The async HTTP client (the only module that imports libcurl).
        .target(name: "HTTPClient", dependencies: ["CCurl"], swiftSettings: swiftSettings),
        // A GraphQL lexer, parser, validator and executor (pure Swift), and the gateway's
        // `charges` schema over it (no server library: the fuzz harness links it).
        .target(name: "GraphQL", dependencies: ["StrictJSON"], swiftSettings: swiftSettings),
        .target(name: "GatewayGraphQL", dependencies: ["GraphQL", "PaymentGateway", "PaymentRules"], swiftSettings: swiftSettings),
        // The gateway's web handlers: /graphql and the dashboard.
        .target(name: "GatewayWeb", dependencies: ["HTTPServer", "GraphQL", "GatewayGraphQL", "PaymentGateway", "PaymentRules"],
                swiftSettings: swiftSettings),
        // The gateway as a network service (router, terminal API, merchant REST, CoreAPI REST,
        // faults, webhook delivery over HTTP) and RemoteGateway, the `Gateway` that talks to it.
        .target(name: "GatewayService", dependencies: ["HTTPServer", "HTTPClient", "PaymentGateway", "BERTLV", "Timing", "StrictJSON", "PaymentRules"],
                swiftSettings: swiftSettings),
        // A PostgreSQL client over libpq (the only module that imports it): parameterised
        // queries, transactions, typed errors with SQLSTATE, connections on their own threads.
        .target(name: "PostgresClient", dependencies: ["CLibPQ", "Timing", "CodedErrors"], swiftSettings: swiftSettings),
        // The gateway's ledger on PostgreSQL (``LedgerStore``), shared by several gateway servers.
        .target(name: "PostgresLedger", dependencies: ["PostgresClient", "PaymentGateway", "PaymentRules"],
                swiftSettings: swiftSettings),
        // TAPEMU_TEST_HOOKS compiles in the crash switches (TAPEMU_KILL_AT) the crash tests and
        // scripts/chaos use: debug builds only (scripts/chaos passes -Xswiftc -DTAPEMU_TEST_HOOKS
        // to its release build). See Sources/tapemu/CLI/TestHooks.swift.
        // The scenario catalogue and its player (`tapemu scenarios`, and a team's own Swift tests in-process).
        .target(name: "TapToPayTesting",
                dependencies: ["TapToPay", "PaymentFlow", "PaymentGateway", "DeviceStore", "CardChannel", "VirtualCard", "Timing"],
                swiftSettings: swiftSettings),
        .executableTarget(
            name: "tapemu",
            dependencies: ["TapToPay", "TapToPayTesting", "CoreAPI", "PaymentFlow", "EMVKernel", "EMVDisplay", "BenchTiming", "PaymentGateway", "DeviceStore", "CardChannel",
                           "APDUTrace", "Timing", "PCSC", "VirtualCard", "BERTLV", "ISO7816", "GatewayService", "GatewayWeb", "PostgresClient", "PostgresLedger", "StrictJSON",
                           "CLibEdit", "HTTPClient", "PaymentRules", "Storage", "VPCD"],
            swiftSettings: swiftSettings + [.define("TAPEMU_TEST_HOOKS", .when(configuration: .debug))]),
        // The benchmark's baseline: a plain C SCardTransmit loop (no Swift module but PCSC imports
        // libpcsclite).
        .target(name: "CPCSCBaseline", dependencies: ["CPCSCLite"]),
        .executableTarget(
            name: "tapemu-bench",
            dependencies: ["EMVKernel", "BenchTiming", "CardChannel", "APDUTrace", "Timing", "VirtualCard", "PCSC",
                           "BERTLV", "ISO7816", "CPCSCBaseline", "VPCD"],
            swiftSettings: swiftSettings),
        // Durable authorisations per second over HTTP, beside the embedded gateway and a raw
        // durable SQLite commit loop (prints figures, asserts nothing).
        .executableTarget(name: "tapemu-gateway-bench",
                          dependencies: ["GatewayService", "HTTPServer", "HTTPClient", "PaymentGateway", "BERTLV",
                                         "PostgresClient", "PaymentRules"],
                          swiftSettings: swiftSettings),
        // Fuzzing: each harness's one-input function, shared by the libFuzzer build (`scripts/dev
        // fuzz` compiles Fuzz/Main against these modules with -sanitize=fuzzer) and the regression
        // tests. Built and tested like any target: no fuzzing flags here.
        .target(name: "FuzzTargets",
                dependencies: ["BERTLV", "EMVDisplay", "ISO7816", "CardChannel", "APDUTrace", "Timing", "VirtualCard", "EMVKernel", "BenchTiming",
                               "PaymentGateway", "GraphQL", "GatewayGraphQL", "GatewayService", "GatewayWeb", "HTTPServer", "PaymentRules"],
                path: "Fuzz/FuzzTargets", swiftSettings: swiftSettings),

        // What the test targets share (one copy each): temporary directories removed after each
        // test, the scripted card channel, the seeded generator, counters and a wall clock.
        .target(name: "TestSupport", dependencies: ["CardChannel", "APDUTrace", "Timing", "ISO7816", "CodedErrors"], path: "Tests/TestSupport",
                swiftSettings: swiftSettings),
        .testTarget(name: "ISO7816Tests", dependencies: ["ISO7816", "TestSupport"], swiftSettings: swiftSettings),
        // The bytes layer and its display (EMVDecoderTests) share their fixtures.
        .testTarget(name: "BERTLVTests", dependencies: ["BERTLV", "EMVDisplay", "TestSupport", "PaymentRules"], swiftSettings: swiftSettings),
        .testTarget(name: "VirtualCardTests", dependencies: ["VirtualCard", "CardChannel", "Timing", "ISO7816", "BERTLV", "TestSupport", "PaymentRules",
                                                          "Cryptography"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "CardChannelTests",
                    dependencies: ["CardChannel", "APDUTrace", "Timing", "VirtualCard", "ISO7816", "EMVKernel", "TestSupport", "PaymentRules"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "PCSCTests", dependencies: ["PCSC", "CardChannel", "APDUTrace", "Timing", "VirtualCard", "ISO7816",
                                                    "EMVKernel", "TestSupport", "VPCD"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EMVKernelTests",
                    dependencies: ["EMVKernel", "BenchTiming", "CardChannel", "APDUTrace", "Timing", "VirtualCard", "BERTLV",
                                   "ISO7816", "TestSupport", "PaymentRules", "Cryptography"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "PaymentGatewayTests", dependencies: ["PaymentGateway", "VirtualCard", "CardChannel", "Timing", "TestSupport", "PaymentRules", "Storage"],
                    swiftSettings: swiftSettings),
        // Written as a team's own tests would be: TapToPay and TapToPayTesting only.
        .testTarget(name: "TapToPayTestingTests", dependencies: ["TapToPay", "TapToPayTesting"], swiftSettings: swiftSettings),
        .testTarget(name: "TapemuCLITests",
                    dependencies: ["tapemu", "TapToPayTesting", "PaymentGateway", "TapToPay", "CoreAPI", "PaymentFlow", "DeviceStore", "VirtualCard", "CardChannel", "APDUTrace", "Timing",
                                   "BERTLV", "ISO7816", "TestSupport", "PaymentRules", "Storage", "Cryptography"],
                    swiftSettings: swiftSettings),
        // Every input that once broke a harness (Fuzz/regressions/) and every seed (Fuzz/corpus/).
        .testTarget(name: "FuzzRegressionTests", dependencies: ["FuzzTargets"], swiftSettings: swiftSettings),
        .testTarget(name: "GatewayServiceTests",
                    dependencies: ["GatewayService", "TapToPayTesting", "HTTPServer", "HTTPClient", "PaymentGateway", "DeviceStore", "TapToPay", "PaymentFlow", "CoreAPI",
                                   "BERTLV", "VirtualCard", "CardChannel", "EMVKernel", "Timing", "tapemu", "TestSupport", "PaymentRules"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "GraphQLTests", dependencies: ["GraphQL"], swiftSettings: swiftSettings),
        // Every shell command of README.md and docs/, run as written against the built tapemu, and
        // docs/ARCHITECTURE.md's module graph against this file.
        .testTarget(name: "DocTests", dependencies: ["tapemu", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "StrictJSONTests", dependencies: ["StrictJSON"], swiftSettings: swiftSettings),
        // PostgreSQL: the client, the ledger contract on both backends, several servers on one
        // ledger (needs TAPEMU_TEST_POSTGRES; `scripts/dev test` starts a private cluster).
        .testTarget(name: "PostgresLedgerTests",
                    dependencies: ["PostgresClient", "PostgresLedger", "PaymentGateway", "GatewayService", "HTTPServer",
                                   "HTTPClient", "BERTLV", "Timing", "tapemu", "TestSupport", "PaymentRules"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "GatewayWebTests",
                    dependencies: ["GatewayWeb", "GatewayGraphQL", "GraphQL", "HTTPServer", "PaymentGateway", "BERTLV",
                                   "TestSupport", "PaymentRules"],
                    swiftSettings: swiftSettings),
        // Seed 000's "Handle errors in code" sample, verbatim, against the static API (the app's
        // helpers stubbed), as a package that depends on the TapToPay product compiles it.
        .testTarget(name: "SeedSampleTests",
                    dependencies: ["TapToPay", "PaymentFlow", "PaymentGateway", "DeviceStore", "VirtualCard", "CardChannel", "Timing",
                                   "GatewayService", "TestSupport"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "TapToPayTests",
                    dependencies: ["TapToPay", "CoreAPI", "PaymentFlow", "PaymentGateway", "DeviceStore", "EMVKernel", "CardChannel",
                                   "APDUTrace", "Timing", "VirtualCard", "TestSupport", "Storage"],
                    swiftSettings: swiftSettings),
    ]
)
