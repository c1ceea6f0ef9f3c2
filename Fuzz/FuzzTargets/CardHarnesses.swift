import BERTLV
import PaymentRules
import CardChannel
import EMVKernel
import ISO7816
import Synchronization
import VirtualCard
import Timing

/// Cards: profiles from files, the emulated card, and the kernel reading a card.
enum CardHarnesses {
    /// Input: a card profile file (JSON), as `--card FILE` loads it.
    ///
    /// A profile that decodes (and so validates) re-encodes to JSON that decodes to the same
    /// profile; the card it makes is read by the kernel to the end in a bounded number of
    /// exchanges, and no description of the outcome shows the card's PAN.
    @Sendable static func cardProfile(_ input: [UInt8]) throws(FuzzFailure) {
        guard let profile = try? CardProfile.decode(json: input, source: "fuzz.json") else { return }
        let again: CardProfile
        do { again = try CardProfile.decode(jsonText: profile.jsonText, source: "fuzz.json (re-encoded)") } catch {
            throw FuzzFailure("a decoded profile, encoded again, does not decode: \(error)")
        }
        try expect(again == profile, "decode(encode(decode(profile))) differs from decode(profile)")
        let card = EmulatedCard(profile: profile)
        _ = card.atr
        try readSynchronously(card, transaction: Transaction(amount: 1250))
    }

    /// Input: a first byte choosing a built-in card, then command APDUs (each a 2-byte length
    /// and the bytes, see ``FuzzInput``).
    ///
    /// The card answers every command with at least SW1 SW2 (or leaves the field, or goes mute:
    /// it is then powered on again) and never traps, whatever the bytes.
    @Sendable static func card(_ input: [UInt8]) throws(FuzzFailure) {
        guard let first = input.first else { return }
        let profiles = CardProfiles.all
        let card = EmulatedCard(profile: profiles[Int(first) % profiles.count])
        var commands = FuzzInput(input, from: 1)
        var count = 0
        while let command = commands.next() {
            count += 1
            switch card.process(command) {
            case .response(let bytes, let time):
                try expect(bytes.count >= 2, "the card answered \(bytes.count) byte(s), without SW1 SW2")
                try expect(time >= .zero, "the card took a negative time")
            case .removed, .mute, .failure:
                card.powerOn()
            }
        }
        try expect(card.exchangeCount == count, "the card counted \(card.exchangeCount) exchanges for \(count) commands")
    }

    /// Input: a first byte choosing the transaction (amount, type), then the card's responses in
    /// order (each a 2-byte length and the response bytes, data + SW1 SW2; see ``FuzzInput``).
    /// When the input ends the card leaves the field.
    ///
    /// The reader — the kernel behind a card session, which fetches 61xx and resends on 6Cxx —
    /// ends with a read or a typed error, and no description of either shows the PAN it read.
    @Sendable static func kernel(_ input: [UInt8]) async throws(FuzzFailure) {
        let transaction = transaction(input.first ?? 0)
        let channel = FuzzCardChannel(input: FuzzInput(input, from: 1))
        let reader = EMVReader(configuration: .default, environment: environment)
        let early = Mutex<String?>(nil)
        let result: Result<CardRead, KernelError>
        do throws(KernelError) {
            result = .success(try await reader.read(channel: channel, transaction: transaction, apduTimeout: .seconds(2),
                                                    clock: .continuous, onOnlineDataReady: { partial in
                if let pan = partial.card?.pan.digits, contains(partial.description, pan) {
                    early.withLock { $0 = "the online data's description shows the PAN" }
                }
            }))
        } catch {
            result = .failure(error)
        }
        switch result {
        case .success(let read): try check(read)
        case .failure(let error): try check(error)
        }
        if let problem = early.withLock({ $0 }) { throw FuzzFailure(problem) }
    }

    /// The transaction a kernel input's first byte chooses: low 3 bits the amount (around the
    /// default contactless limits), next 2 bits the type.
    static func transaction(_ selector: UInt8) -> Transaction {
        let amounts: [UInt64] = [1250, 0, 1, 5_000, 20_000, 100_000, EMVAmount.maximum, 3_000]
        let types = TransactionType.allCases
        return Transaction(amount: amounts[Int(selector & 0x07)], type: types[Int(selector >> 3) % types.count])
    }

    /// A fixed date and unpredictable numbers, so an input replays the same way.
    static let environment = KernelEnvironment(
        now: { TransactionDateTime(year: 2026, month: 11, day: 30, hour: 10, minute: 0, second: 0) },
        unpredictableNumber: { 0x1234_5678 })

    static func check(_ read: CardRead) throws(FuzzFailure) {
        let pan = read.card.pan.digits
        for text in [read.description, read.card.description, "\(read.card)", read.card.track2?.description ?? "",
                     read.exchanges.map(\.description).joined()] {
            try expect(!contains(text, pan), "the description of a card read shows the PAN")
        }
    }

    static func check(_ error: KernelError) throws(FuzzFailure) {
        let text = "\(error) \(error.reason) \(error.partial?.description ?? "")"
        if let pan = error.partial?.card?.pan.digits {
            try expect(!contains(text, pan), "the description of a kernel error shows the PAN")
        }
    }

    /// Reads `card` with the bare kernel (no session, no clock): every command straight to the
    /// card, every answer straight back. Fails when the kernel does not finish.
    static func readSynchronously(_ card: EmulatedCard, transaction: Transaction) throws(FuzzFailure) {
        var kernel = EMVKernel(configuration: .default, transaction: transaction,
                               dateTime: environment.now(), unpredictableNumber: environment.unpredictableNumber())
        var action = kernel.start()
        for _ in 0..<100_000 {
            switch action {
            case .send(let command):
                guard case .response(let bytes, _) = card.process(command), let r = try? ResponseAPDU(bytes: bytes) else {
                    return   // the card left the field or went mute: the read is over
                }
                action = kernel.receive(r)
            case .onlineDataReady:
                action = kernel.resume()
            case .complete(let read):
                return try check(read)
            case .fail(let error):
                return try check(error)
            }
        }
        throw FuzzFailure("the kernel did not finish reading an emulated card in 100000 exchanges")
    }
}

/// A card whose answers are the fuzz input: each command gets the next message of the input
/// (an answer shorter than SW1 SW2 is a malformed response); when the input ends, the card
/// leaves the field.
final class FuzzCardChannel: CardChannel {
    private let input: Mutex<FuzzInput>

    init(input: FuzzInput) { self.input = Mutex(input) }

    var atr: [UInt8] { ContactlessATR.typeA(historicalBytes: []) }

    func transmit(_ command: CommandAPDU) async throws(CardChannelError) -> ResponseAPDU {
        guard let bytes = input.withLock({ $0.next() }) else {
            throw CardChannelError(.cardRemoved, "the fuzz input has no more responses")
        }
        guard let response = try? ResponseAPDU(bytes: bytes) else {
            throw CardChannelError(.malformedResponse, "a response of \(bytes.count) byte(s)")
        }
        return response
    }

    /// Answers at once: nothing to race against the deadline.
    func transmit(_ command: CommandAPDU, deadline: Duration, on clock: MonotonicClock,
                  onTimeout: @escaping @Sendable () -> CardChannelError) async throws(CardChannelError) -> ResponseAPDU {
        try await transmit(command)
    }
}
