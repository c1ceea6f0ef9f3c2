import CardChannel
import DeviceStore
import EMVKernel
import Foundation
import PaymentGateway
import CoreAPI
import TapToPay

/// Which exit status each error of the layers below ends a command with: one function per error
/// type, beside ``ExitCode/table``. Commands never pick a number for an error themselves; they
/// throw ``CommandFailure`` built from these (``CommandFailure/init(_:_:)-channel``, …).
extension ExitCode {
    /// pay/sale: declined by the issuer, or not approved (the payment exists); read: the card
    /// declined offline.
    static let declined: Int32 = 2
    /// pay/sale: failed, no payment occurred.
    static let failedNoPayment: Int32 = 3
    /// pay/sale: the outcome is unknown; the card may have been charged.
    static let outcomeUnknown: Int32 = 4

    /// A card channel's failure: a service or reader that is not there is 69, a card that went
    /// or did not answer in time 75, a card or trace that broke the protocol 65.
    static func of(_ code: CardChannelError.Code?) -> Int32 {
        switch code {
        case .noService?, .noReader?, .readerRemoved?, .sharingViolation?: return unavailable
        case .noCard?, .cardRemoved?, .timeout?: return temporaryFailure
        case .traceMismatch?, .traceEnded?, .malformedResponse?, .notAPaymentCard?: return dataError
        case .transmitFailed?, .responseChainingFailed?: return temporaryFailure
        default: return software
        }
    }

    /// A card read that failed: the channel's status when the channel failed, `offlineDecline`
    /// when the card declined offline (read: 2; a benchmarked read: 1), else malformed (65).
    static func of(_ error: KernelError, offlineDecline: Int32 = declined) -> Int32 {
        switch error.code {
        case .cardDeclinedOffline: return offlineDecline
        case .channelFailed: return of(error.channelError?.code)
        default: return dataError
        }
    }

    /// A failed payment (seed 000): 4 when the card may have been charged, 75 for `busy`
    /// (another process works on this order: its outcome is not this run's to tell), else 3.
    static func of(_ error: TapToPayError) -> Int32 {
        if error.mayHaveCharged { return outcomeUnknown }
        return error == .busy ? temporaryFailure : failedNoPayment
    }

    /// A sale's outcome (seeds 002/003): approved 0, another answer 2, `transactionInProgress`
    /// 75 (another process works on this order), any other onError 3, a communication error 4.
    static func of(_ outcome: CoreSaleOutcome) -> Int32 {
        switch outcome {
        case .response(let r): return r.isApproved ? success : declined
        case .error(.transactionInProgress, _): return temporaryFailure
        case .error: return failedNoPayment
        case .commError: return outcomeUnknown
        }
    }

    /// A ledger that cannot be opened, read or written: 66 when the data directory is not there,
    /// 69 when a PostgreSQL ledger's database does not answer, else 74.
    static func of(_ error: GatewayError) -> Int32 {
        switch error.code {
        case .noDataDirectory: return noInput
        case .connectionLost: return unavailable
        default: return ioError
        }
    }

    /// A device store that cannot be opened, read or written: as for the ledger
    /// (``of(_:)-gateway``), whatever its code.
    static func of(_ error: DeviceStoreError) -> Int32 {
        error.code == .noDataDirectory ? noInput : ioError
    }

    /// A request on one record of the device store that it refused (`pending close`): no such
    /// record 66, another process holds it 75, a request that cannot be done 64; a store that
    /// failed is nil: it ends as ``of(_:)-devicestore`` says.
    static func ofRecordRequest(_ error: DeviceStoreError) -> Int32? {
        switch error.code {
        case .notFound: return noInput
        case .busy: return temporaryFailure
        case .invalidRequest: return usage
        default: return nil
        }
    }
}

extension CommandFailure {
    /// A card channel's failure, with the status ``ExitCode/of(_:)-channel`` gives it.
    init(_ error: CardChannelError, _ message: String) {
        self.init(exitCode: ExitCode.of(error.code), message)
    }

    /// Something failed that has no more specific status (exit 1).
    static func failure(_ message: String) -> CommandFailure { CommandFailure(exitCode: ExitCode.failure, message) }
    /// A value the command line gave that is wrong, found after parsing (exit 64).
    static func usage(_ message: String) -> CommandFailure { CommandFailure(exitCode: ExitCode.usage, message) }
    /// An internal error (exit 70).
    static func software(_ message: String) -> CommandFailure { CommandFailure(exitCode: ExitCode.software, message) }
    /// A file, stream or store that cannot be read or written (exit 74).
    static func ioError(_ message: String) -> CommandFailure { CommandFailure(exitCode: ExitCode.ioError, message) }
    /// Not now: try again later (exit 75).
    static func temporaryFailure(_ message: String) -> CommandFailure { CommandFailure(exitCode: ExitCode.temporaryFailure, message) }
}
