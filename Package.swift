// swift-tools-version:6.0
// tapemu — the Tap-to-Pay payment stack, emulated on Linux.
// Layers (README "Layout"), top to bottom: tapemu CLI → TapToPay → PaymentGateway / EMVKernel →
// PCSC / VirtualCard / APDUTrace → CardChannel → Timing, ISO7816 / BERTLV → C shims.
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

        // Bytes.
        .target(name: "ISO7816", swiftSettings: swiftSettings),
        .target(name: "BERTLV", swiftSettings: swiftSettings),
        // EMV values decoded for people (amounts, dates, bit fields by name, CVM lists, DOLs).
        .target(name: "EMVDisplay", dependencies: ["BERTLV"], swiftSettings: swiftSettings),
        // One clock type, deadlines, the one resume-once primitive (no dependencies).
        .target(name: "Timing", swiftSettings: swiftSettings),
        // The channel: one protocol, the session (timing, deadlines, GET RESPONSE / resend-with-Le
        // in one place), its errors, and the card-side responder every in-process card plays through.
        .target(name: "CardChannel", dependencies: ["ISO7816", "Timing"], swiftSettings: swiftSettings),
        // The trace library: format, parser/writer, matching, redaction, recorder, importers,
        // the trace's card side (in process and for vpcd).
        .target(name: "APDUTrace", dependencies: ["CardChannel", "ISO7816", "BERTLV", "Timing"],
                swiftSettings: swiftSettings),
        // Emulated EMV cards (pure: bytes in, bytes out), their channel, and the crypto they share
        // with the issuer.
        .target(name: "VirtualCard", dependencies: ["ISO7816", "BERTLV", "COpenSSL", "CardChannel", "Timing"],
                swiftSettings: swiftSettings),
        // The only module that imports libpcsclite.
        .target(name: "PCSC", dependencies: ["CPCSCLite", "CardChannel", "ISO7816", "Timing"],
                swiftSettings: swiftSettings),
        // The contactless kernel: no OpenSSL, no benchmark code.
        .target(name: "EMVKernel", dependencies: ["ISO7816", "BERTLV", "CardChannel", "Timing"],
                swiftSettings: swiftSettings),
        // Read timings for `tapemu bench` and tapemu-bench: exchange kinds, the on-air floor,
        // percentiles, replay set-up.
        .target(name: "BenchTiming", dependencies: ["EMVKernel", "CardChannel", "APDUTrace", "ISO7816", "BERTLV"],
                swiftSettings: swiftSettings),
        .target(name: "PaymentGateway", dependencies: ["CSQLite", "BERTLV", "VirtualCard", "Timing"],
                swiftSettings: swiftSettings),
        .target(name: "TapToPay",
                dependencies: ["EMVKernel", "PaymentGateway", "CardChannel", "Timing", "BERTLV", "ISO7816"],
                swiftSettings: swiftSettings),
        // HTTP messages and the server (the only module that imports libmicrohttpd).
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD"], swiftSettings: swiftSettings),
        .executableTarget(
            name: "tapemu",
            dependencies: ["TapToPay", "EMVKernel", "EMVDisplay", "BenchTiming", "PaymentGateway", "CardChannel", "APDUTrace",
                           "Timing", "PCSC", "VirtualCard", "BERTLV", "ISO7816"],
            swiftSettings: swiftSettings),
        // The benchmark's baseline: a plain C SCardTransmit loop (no Swift module but PCSC imports
        // libpcsclite).
        .target(name: "CPCSCBaseline", dependencies: ["CPCSCLite"]),
        .executableTarget(
            name: "tapemu-bench",
            dependencies: ["EMVKernel", "BenchTiming", "CardChannel", "APDUTrace", "Timing", "VirtualCard", "PCSC",
                           "BERTLV", "ISO7816", "CPCSCBaseline"],
            swiftSettings: swiftSettings),
        // Fuzzing: each harness's one-input function, shared by the libFuzzer build (`scripts/dev
        // fuzz` compiles Fuzz/Main against these modules with -sanitize=fuzzer) and the regression
        // tests. Built and tested like any target: no fuzzing flags here.
        .target(name: "FuzzTargets",
                dependencies: ["BERTLV", "EMVDisplay", "ISO7816", "CardChannel", "APDUTrace", "Timing", "VirtualCard", "EMVKernel", "BenchTiming",
                               "PaymentGateway"],
                path: "Fuzz/FuzzTargets", swiftSettings: swiftSettings),

        .testTarget(name: "ISO7816Tests", dependencies: ["ISO7816"], swiftSettings: swiftSettings),
        // The bytes layer and its display (EMVDecoderTests) share their fixtures.
        .testTarget(name: "BERTLVTests", dependencies: ["BERTLV", "EMVDisplay"], swiftSettings: swiftSettings),
        .testTarget(name: "VirtualCardTests", dependencies: ["VirtualCard", "CardChannel", "Timing", "ISO7816", "BERTLV"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "CardChannelTests",
                    dependencies: ["CardChannel", "APDUTrace", "Timing", "VirtualCard", "ISO7816", "EMVKernel"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "PCSCTests", dependencies: ["PCSC", "CardChannel", "APDUTrace", "Timing", "VirtualCard", "ISO7816",
                                                    "EMVKernel"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "EMVKernelTests",
                    dependencies: ["EMVKernel", "BenchTiming", "CardChannel", "APDUTrace", "Timing", "VirtualCard", "BERTLV",
                                   "ISO7816"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "PaymentGatewayTests", dependencies: ["PaymentGateway", "VirtualCard", "CardChannel", "Timing"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "TapemuCLITests",
                    dependencies: ["tapemu", "PaymentGateway", "VirtualCard", "CardChannel", "APDUTrace", "Timing"],
                    swiftSettings: swiftSettings),
        // Every input that once broke a harness (Fuzz/regressions/) and every seed (Fuzz/corpus/).
        .testTarget(name: "FuzzRegressionTests", dependencies: ["FuzzTargets"], swiftSettings: swiftSettings),
        .testTarget(name: "TapToPayTests",
                    dependencies: ["TapToPay", "PaymentGateway", "EMVKernel", "CardChannel", "APDUTrace", "Timing", "VirtualCard"],
                    swiftSettings: swiftSettings),
    ]
)
