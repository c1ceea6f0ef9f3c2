import TapToPay

// Seed 000, "Handle errors in code", compiled as an app would compile it: the sample below is the
// seed's code block token for token (the seed's page lost its line breaks; they are put back where
// its `//` comments end a line), wrapped in a function whose parameters are the sample's free
// variables. The app's helpers it calls are stubs that record what was called (AppCalls).

func handleErrorsInCode(amountInCents: Int, orderId: String, webhookUrl: String?) async {
    // ---- seed 000, verbatim ----
    do {
        let result = try await TapToPay.acceptPayment(
            amount: amountInCents, orderId: orderId, callbackUrl: webhookUrl)
        show(result)
    } catch let error as TapToPayError {
        switch error {
        case .outcomeUnknown(let orderId):
            showPending(orderId) // Do not retry.
        case .cancelled:
            break // No payment occurred.
        case .tokenExpired, .notPrepared, .invalidToken:
            await renewTokenAndPrepare()
        case .locationDenied:
            showLocationSettingsHint()
        case .termsDeclined:
            showTermsRequired()
        case .paymentFailed(let code):
            showFailure(code)
        default:
            showError(error)
        }
    } catch {
        showError(error)
    }
    // ---- end of the seed's sample ----
}

// MARK: - The app's helpers, stubbed

func show(_ result: PaymentResult) { AppCalls.record("show(\(result.status.rawValue))") }
func showPending(_ orderId: String) { AppCalls.record("showPending(\(orderId))") }
func renewTokenAndPrepare() async { AppCalls.record("renewTokenAndPrepare") }
func showLocationSettingsHint() { AppCalls.record("showLocationSettingsHint") }
func showTermsRequired() { AppCalls.record("showTermsRequired") }
func showFailure(_ code: TapToPayErrorCode) { AppCalls.record("showFailure(\(code.rawValue))") }
func showError(_ error: any Error) { AppCalls.record("showError(\(error))") }
