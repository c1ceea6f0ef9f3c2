import Foundation

/// Exit statuses, after sysexits(3) where one fits.
enum ExitCode {
    static let success: Int32 = 0
    /// Something failed that has no more specific status.
    static let failure: Int32 = 1
    /// `EX_USAGE`: the command line is wrong.
    static let usage: Int32 = 64
    /// `EX_DATAERR`: the input data is malformed (bad hex, truncated TLV, absurd lengths).
    static let dataError: Int32 = 65
    /// `EX_NOINPUT`: an input file does not exist or cannot be read.
    static let noInput: Int32 = 66
    /// `EX_UNAVAILABLE`: a service or device is not available (no reader, pcscd not running).
    static let unavailable: Int32 = 69
    /// `EX_SOFTWARE`: an internal error.
    static let software: Int32 = 70
    /// `EX_IOERR`: an input/output error.
    static let ioError: Int32 = 74
    /// `EX_TEMPFAIL`: a temporary failure; trying again may work (timeouts).
    static let temporaryFailure: Int32 = 75

    /// The one table of exit statuses: every command's documented statuses are among these,
    /// with these meanings (`tapemu help exit-codes`, README). The payment outcomes 2, 3 and 4
    /// are `pay`'s and `sale`'s.
    static let table: [(code: Int32, meaning: String)] = [
        (success, "success (pay, sale: approved)"),
        (failure, "a check failed: a replayed trace diverged, a benchmarked read or payment failed, a scenario graded its backend wrong (scenarios run)"),
        (declined, "a result that is a no: pay/sale declined by the issuer (the payment exists); read: the card declined offline"),
        (failedNoPayment, "pay/sale: failed — no payment occurred (invalid amount or order id, no card in time, reader not ready, card declined offline, cancelled while waiting for a card, …)"),
        (outcomeUnknown, "pay/sale: outcome unknown — the card may have been charged; do not retry, look the order up. pay (seed 000): any card read or PIN entry error and a Ctrl-C once the card is being read, before the request left or after it; sale (seeds 002/003): a card read and a request that did not reach the gateway"),
        (usage, "usage: the command line or an option's value is wrong"),
        (dataError, "malformed input: hex, TLV, APDU, a trace or profile file, a card that breaks the protocol, a trace that diverges"),
        (noInput, "a file or --data-dir that does not exist"),
        (unavailable, "a service or device is not there: pcscd not running, no such reader"),
        (software, "an internal error (a bug: please report it)"),
        (ioError, "a file or store cannot be read or written: damaged, missing where it was, read-only or full disk, closed stdout"),
        (temporaryFailure, "not now: no card in time (read, bench: pay/sale say 3, no payment occurred), card removed, no answer in time, records still pending, another process paying or resolving the same order (pay/sale: nothing sent) — try again later"),
    ]

    /// What `code` means, from ``table``.
    static func meaning(_ code: Int32) -> String? { table.first { $0.code == code }?.meaning }
}
