import PaymentGateway
import Testing
@testable import CoreAPI

/// The CoreError each gateway failure becomes for the CoreAPI REST calls (refund, reversal,
/// transaction list): a failure of the gateway or its ledger is the network's (try again
/// later), never `invalidParameters` ("correct the value"), which sends the app to fix a
/// request that was fine.
@Suite("CoreAPI REST: gateway errors to CoreError")
struct RestErrorMappingTests {
    @Test(arguments: [
        (GatewayError.Code.timeout, CoreError.timeout),
        (.cancelled, .cancelled),
        (.connectionLost, .networkError),
        (.serverError, .networkError),
        (.busy, .networkError),
        (.storage, .networkError),
        (.corruptLedger, .networkError),
        (.unsupportedLedgerVersion, .networkError),
        (.readOnlyStorage, .networkError),
        (.noDataDirectory, .networkError),
        (.storeMissing, .networkError),
        (.notFound, .transactionNotFound),
        (.alreadyReversed, .alreadyReversed),
        (.notReversible, .notReversible),
        (.notRefundable, .refundNotAllowed),
        (.refundExceedsRemaining, .refundNotAllowed),
        (.invalidRequest, .invalidParameters),
        (.orderConflict, .invalidParameters),
        (.sdkUpgradeRequired, .terminalSettings),
    ])
    func mapping(_ gateway: GatewayError.Code, _ expected: CoreError) {
        let error = RestConnector.restError(GatewayError(gateway, "it failed"), doing: "the refund")
        #expect(error.code == expected, "\(gateway)")
        #expect(error.gatewayError?.code == gateway)
    }
}
