#if TAPEMU_TEST_HOOKS
import Foundation
import PaymentGateway
import PaymentFlow
#if canImport(Glibc)
import Glibc
#endif

/// Where `TAPEMU_KILL_AT` makes `tapemu pay` or `tapemu sale` kill itself (SIGKILL), from the
/// card read to the hand-over of the result: the payment flow's checkpoints, two points inside
/// the gateway call, and the moment after the result is printed. The crash tests and
/// `scripts/chaos` use it; a user never needs it.
enum KillPoint: String, CaseIterable, Sendable {
    /// The card is read (with early submission the request may already be out).
    case cardRead
    /// The pending record is durable; nothing sent yet.
    case pendingWritten
    /// The request has started leaving (the gateway may or may not have it yet).
    case submitted
    /// The request reached the gateway, which has not recorded it yet.
    case gatewayReceived
    /// The gateway recorded (approved or declined) the sale; the answer is not back yet.
    case gatewayRecorded
    /// The answer is back and stored in the record; the result is not printed yet.
    case answered
    /// The result is written to stdout; the record has not left the device yet.
    case printed

    /// The environment variable that names the point.
    static let environmentVariable = "TAPEMU_KILL_AT"

    static func fromEnvironment() throws -> KillPoint? {
        guard let value = ProcessInfo.processInfo.environment[environmentVariable], !value.isEmpty else {
            return nil
        }
        guard let point = KillPoint(rawValue: value) else {
            throw UsageError("\(environmentVariable)=\(value) is not a kill point (\(allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        return point
    }

    /// Kills the process when `point` is this one.
    func kill(at point: KillPoint) {
        guard point == self else { return }
        FileHandle.standardError.write(Data("tapemu: \(Self.environmentVariable): killed at \(point.rawValue)\n".utf8))
        Glibc.kill(getpid(), SIGKILL)
    }

    /// The payment flow's checkpoint hook for this kill point.
    var checkpoint: @Sendable (FlowCheckpoint) async -> Void {
        { flowPoint in
            if let point = KillPoint(rawValue: flowPoint.rawValue) { self.kill(at: point) }
        }
    }

    /// The gateway to authorise with: `inner`, or one that kills at the gateway's own points.
    func gateway(_ inner: any Gateway) -> any Gateway {
        self == .gatewayReceived || self == .gatewayRecorded ? KillSwitchGateway(inner: inner, killAt: self) : inner
    }
}
#endif
