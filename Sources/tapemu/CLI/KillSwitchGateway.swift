#if TAPEMU_TEST_HOOKS
import PaymentGateway

/// A gateway that kills the process just before or just after the inner gateway records an
/// authorisation (the crash tests' `gatewayReceived` and `gatewayRecorded`).
struct KillSwitchGateway: ForwardingGateway {
    let inner: any Gateway
    let killAt: KillPoint

    func authorize(_ request: AuthorisationRequest, options: GatewayRequestOptions) async throws(GatewayError) -> AuthorisationResponse {
        killAt.kill(at: .gatewayReceived)
        let result: Result<AuthorisationResponse, GatewayError>
        do throws(GatewayError) {
            result = .success(try await inner.authorize(request, options: options))
        } catch {
            result = .failure(error)
        }
        killAt.kill(at: .gatewayRecorded)
        return try result.get()
    }
}
#endif
