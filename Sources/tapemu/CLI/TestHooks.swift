import PaymentGateway
import PaymentFlow

/// The crash switches of the crash tests and `scripts/chaos`, behind one door: `TAPEMU_KILL_AT`
/// (``KillPoint``) makes `pay` or `sale` kill itself at a point of the payment.
///
/// They exist only in a build with the compile condition `TAPEMU_TEST_HOOKS`: Package.swift
/// defines it for debug builds (`swift build`, `swift test`), and `scripts/chaos` builds its
/// release binary with `-Xswiftc -DTAPEMU_TEST_HOOKS`. In any other build these are no-ops, the
/// kill-point code is not compiled in, and `TAPEMU_KILL_AT` is ignored.
struct TestHooks: Sendable {
    #if TAPEMU_TEST_HOOKS
    private let killPoint: KillPoint?

    /// The hooks the environment switches on (`TAPEMU_KILL_AT`); a usage error for an unknown point.
    static func fromEnvironment() throws -> TestHooks {
        TestHooks(killPoint: try KillPoint.fromEnvironment())
    }

    /// The gateway to authorise with: `inner`, or one that kills at the gateway's own points.
    func gateway(_ inner: any Gateway) -> any Gateway { killPoint?.gateway(inner) ?? inner }

    /// The payment flow's checkpoint hook.
    var checkpoint: @Sendable (FlowCheckpoint) async -> Void { killPoint?.checkpoint ?? { @Sendable _ in } }

    /// The result is on stdout; the device's record has not left yet.
    func resultPrinted() { killPoint?.kill(at: .printed) }

    /// What `tapemu help sale` says about them.
    static let help = """

        For crash tests, the environment variable \(KillPoint.environmentVariable)=<point> makes the \
        process kill itself (SIGKILL) at that point: \(KillPoint.allCases.map(\.rawValue).joined(separator: ", ")).
        """
    #else
    static func fromEnvironment() throws -> TestHooks { TestHooks() }
    func gateway(_ inner: any Gateway) -> any Gateway { inner }
    var checkpoint: @Sendable (FlowCheckpoint) async -> Void { { @Sendable _ in } }
    func resultPrinted() {}
    static let help = ""
    #endif
}
