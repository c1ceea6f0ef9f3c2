public import BERTLV
public import PaymentRules
public import ISO7816

/// The reader side of an EMV contactless transaction, as a value: it takes the card's responses
/// and returns the next command or the outcome. It does no I/O and never waits; ``EMVReader``
/// runs it over a card channel.
///
/// ```swift
/// var kernel = EMVKernel(configuration: .default, transaction: Transaction(amount: 1250))
/// var action = kernel.start()                       // .send(SELECT 2PAY.SYS.DDF01)
/// while case .send(let command) = action {
///     action = kernel.receive(try await session.send(command))
/// }
/// ```
///
/// Phases: SELECT PPSE (or, without one, the list of AIDs), final selection, GET PROCESSING
/// OPTIONS, READ RECORD for every record of the AFL, GENERATE AC (ARQC) when the GPO answer held
/// no cryptogram. A card that breaks the protocol gives `.fail` with a ``KernelError`` naming the
/// step; calling an event the current phase does not expect is a programming error and traps.
public struct EMVKernel: Sendable {
    /// What the driver does next.
    public enum Action: Sendable {
        /// Send this command and hand the response to ``receive(_:)``.
        case send(CommandAPDU)
        /// The cryptogram and the PAN are known before the last exchange (qVSDC): an authorisation
        /// may start now. Emitted at most once, only for an ARQC; call ``resume()`` for the next
        /// command. A failure after this point leaves the payment's outcome unclear.
        case onlineDataReady(PartialCardRead)
        /// The card was read.
        case complete(CardRead)
        /// Reading failed; no more commands.
        case fail(KernelError)
    }

    /// The phases of the transaction, each with exactly the data it has.
    public enum State: Sendable {
        /// Before ``start()``.
        case idle
        /// SELECT 2PAY.SYS.DDF01 was sent.
        case selectingPPSE
        /// No usable PPSE: selecting the terminal's AIDs one by one (EMV Book 1 §12.3.3).
        case selectingFromList(ListSelection)
        /// Final selection: SELECT of the best candidate was sent.
        case selectingApplication(FinalSelection)
        /// GET PROCESSING OPTIONS was sent.
        case gettingProcessingOptions(ProcessingOptionsRequest)
        /// READ RECORD of `remaining[0]` was sent.
        case readingRecords(RecordReading)
        /// The online data was handed out; ``resume()`` sends READ RECORD of `remaining[0]`.
        case onlineDataReady(RecordReading)
        /// INTERNAL AUTHENTICATE was sent (DDA), GENERATE AC follows.
        case authenticating(DynamicAuthentication)
        /// GENERATE AC was sent.
        case generatingAC(CryptogramRequest)
        /// Complete or failed.
        case done
    }

    /// The list-of-AIDs fallback: one terminal AID at a time, with "next occurrence" for
    /// partial matches.
    public struct ListSelection: Sendable {
        /// The terminal AID whose SELECT was sent.
        public var current: SupportedApplication
        /// Whether that SELECT asked for the next occurrence (P2 = 02).
        public var nextOccurrence: Bool
        /// Terminal AIDs still to try.
        public var pending: [SupportedApplication]
        /// ADF names the card gave for `current` so far (a card that repeats one is stopped).
        public var seen: [[UInt8]]
        /// Applications found so far.
        public var found: [ApplicationCandidate]
        /// Why the PPSE could not be used.
        public var ppseFailure: String
        var lastRejection: KernelError?
    }

    /// Final selection: the candidate being selected and those left if it is refused.
    public struct FinalSelection: Sendable {
        public var current: ApplicationCandidate
        public var remaining: [ApplicationCandidate]
        var lastRejection: KernelError?
    }

    /// A selected application: the candidate and its FCI.
    public struct SelectedApplication: Hashable, Sendable {
        public var candidate: ApplicationCandidate
        public var fci: ApplicationFCI

        /// The kernel it runs under (Book B §3.3.2.5).
        var kernel: ContactlessKernel {
            ContactlessKernel(kernelIdentifier: candidate.kernelIdentifier, brand: PaymentNetwork(aid: fci.dfName))
        }

        /// What is known of it once the AIP is.
        func info(aip: [UInt8]) -> ApplicationInfo {
            let kernel = self.kernel
            var info = ApplicationInfo(aid: fci.dfName, label: fci.label ?? candidate.label,
                                       preferredName: fci.preferredName, priority: fci.priority ?? candidate.priority,
                                       brand: PaymentNetwork(aid: fci.dfName), kernelID: kernel.id,
                                       languagePreference: fci.languagePreference, applicationInterchangeProfile: aip)
            info.kernel = kernel
            return info
        }
    }

    /// GPO sent for an application; the other candidates wait in case the card answers 6985.
    public struct ProcessingOptionsRequest: Sendable {
        public var application: SelectedApplication
        public var remaining: [ApplicationCandidate]
        /// The PDOL data sent.
        public var pdolData: [UInt8]
    }

    /// Reading the records the AFL names.
    public struct RecordReading: Sendable {
        public var application: SelectedApplication
        public var aip: [UInt8]
        public var afl: [AFLEntry]
        /// Records not read yet; the first is in flight (or next, after the online data point).
        public var remaining: [RecordReference]
        /// Data objects from the GPO answer and the records read so far.
        public var data: CardDataStore
        public var onlineDataWasReady: Bool
        /// Track 2 as parsed for the online data, reused when the card data is read again with
        /// the same bytes of 57.
        var knownTrack2: Track2? = nil
        /// The PDOL data sent (CDA's transaction data hash covers it).
        var pdolData: [UInt8] = []
        /// The static data to be authenticated from the records the AFL marks, so far.
        var staticData: [UInt8] = []
    }

    /// INTERNAL AUTHENTICATE sent for DDA: what GENERATE AC needs once the signature is checked.
    public struct DynamicAuthentication: Sendable {
        public var reading: RecordReading
        public var card: CardData
        public var cvmDecision: CVMDecision
        /// The DDOL data sent: the terminal dynamic data the signature covers.
        public var ddolData: [UInt8]
        /// The certificates, recovered.
        var oda: ODAResult
        /// The card's key, from its certificate.
        var key: RSAPublicKey
    }

    /// GENERATE AC sent for an ARQC.
    public struct CryptogramRequest: Sendable {
        public var application: SelectedApplication
        public var aip: [UInt8]
        public var data: CardDataStore
        public var card: CardData
        public var cvm: CardholderVerification
        /// How ``cvm`` was decided.
        public var cvmDecision: CVMDecision
        /// The CDOL1 data sent.
        public var cdolData: [UInt8]
        /// Offline data authentication so far (for CDA: the certificates, before the signature).
        var oda: ODAResult = .notPerformed
        /// CDA was asked for: the card's key its signature is checked with.
        var cdaKey: RSAPublicKey? = nil
        /// The PDOL data sent in GPO.
        var pdolData: [UInt8] = []
    }

    public let configuration: TerminalConfiguration
    public let transaction: Transaction
    /// Whether the kernel stops at the online data point with the partial read
    /// (``Action/onlineDataReady(_:)``). False for a driver with nobody to hand it to: the point
    /// is still recorded (``PartialCardRead/onlineDataWasReady`` of a later failure), but the
    /// partial read and its online data are not built, and the records follow at once.
    public var handsOutOnlineData = true
    /// The terminal's data objects for this transaction (amounts, date, unpredictable number,
    /// TTQ, TVR, CVM results, …).
    public var terminalData: [Tag: [UInt8]] { terminalValues.dictionary }
    private var terminalValues: TerminalValues
    public private(set) var state: State = .idle

    /// Most SELECT "next occurrence" rounds for one terminal AID.
    static let maxOccurrences = 16

    /// A kernel for one transaction, with the date and unpredictable number fixed up front (so a
    /// run is reproducible).
    public init(configuration: TerminalConfiguration = .default, transaction: Transaction,
                dateTime: TransactionDateTime, unpredictableNumber: UInt32) {
        self.configuration = configuration
        self.transaction = transaction
        self.terminalValues = TerminalData.make(configuration: configuration, transaction: transaction,
                                              dateTime: dateTime, unpredictableNumber: unpredictableNumber)
    }

    /// A kernel for one transaction, taking the date and a fresh unpredictable number from
    /// `environment`.
    public init(configuration: TerminalConfiguration = .default, transaction: Transaction,
                environment: KernelEnvironment = .system) {
        self.init(configuration: configuration, transaction: transaction, dateTime: environment.now(),
                  unpredictableNumber: environment.unpredictableNumber())
    }

    /// The step of the command in flight (or next), for errors of the channel; nil when idle or done.
    public var currentStep: KernelStep? {
        switch state {
        case .idle, .done: return nil
        case .selectingPPSE: return .ppse
        case .selectingFromList(let s): return .selectAID(s.current.aid)
        case .selectingApplication(let s): return .selectAID(s.current.aid)
        case .gettingProcessingOptions: return .gpo
        case .readingRecords(let r), .onlineDataReady(let r): return r.remaining.first?.step
        case .authenticating: return .internalAuthenticate
        case .generatingAC: return .generateAC
        }
    }

    // MARK: - Events

    /// Starts the transaction: SELECT PPSE.
    public mutating func start() -> Action {
        guard case .idle = state else { preconditionFailure("EMVKernel.start() called twice") }
        state = .selectingPPSE
        return .send(.selectPPSE)
    }

    /// The card's response to the last command sent.
    public mutating func receive(_ response: ResponseAPDU) -> Action {
        // The state is this call's from here (moved out, not copied); every way out sets the next.
        // `before` is immutable below except where the reading is taken out of it.
        var before = State.done
        swap(&before, &state)
        if case .readingRecords(var reading) = before {
            // Once `before` lets go of it the reading is this call's alone, so adding the
            // record's objects copies nothing; on a failure it is rolled back to what it was.
            before = .done
            let objectCount = reading.data.count, remainingCount = reading.remaining.count
            let current = reading.remaining[0]
            do throws(KernelError) {
                if let action = try recordAnswered(&reading, response) { return action }
                return sendRecord(reading)
            } catch {
                var error = error
                if error.partial == nil {
                    reading.data.truncate(to: objectCount)
                    if reading.remaining.count < remainingCount { reading.remaining.insert(current, at: 0) }
                    error.partial = partialRead(of: .readingRecords(reading))
                }
                state = .done
                return .fail(error)
            }
        }
        do throws(KernelError) {
            switch before {
            case .idle, .done, .onlineDataReady:
                state = before
                preconditionFailure("EMVKernel.receive(_:) with no command in flight (state \(before))")
            case .selectingPPSE:
                return try ppseAnswered(response)
            case .selectingFromList(let selection):
                return try listSelectionAnswered(selection, response)
            case .selectingApplication(let selection):
                return try finalSelectionAnswered(selection, response)
            case .gettingProcessingOptions(let request):
                return try processingOptionsAnswered(request, response)
            case .readingRecords:
                preconditionFailure("handled above")
            case .authenticating(let request):
                return try dynamicSignatureAnswered(request, response)
            case .generatingAC(let request):
                return try cryptogramAnswered(request, response)
            }
        } catch {
            var error = error
            if error.partial == nil { error.partial = partialRead(of: before) }
            state = .done
            return .fail(error)
        }
    }

    /// Goes on after ``Action/onlineDataReady(_:)``: the next READ RECORD.
    public mutating func resume() -> Action {
        guard case .onlineDataReady = state else {
            preconditionFailure("EMVKernel.resume() outside the online data point (state \(state))")
        }
        var current = State.done
        swap(&current, &state)
        guard case .onlineDataReady(let reading) = current else { preconditionFailure("checked above") }
        current = .done   // the reading is the only holder of its data
        return sendRecord(reading)
    }

    /// What is known now: for the channel's errors (the driver adds the exchanges).
    public var partial: PartialCardRead { partialRead(of: state) }

    // MARK: - Selection

    private mutating func ppseAnswered(_ response: ResponseAPDU) throws(KernelError) -> Action {
        guard response.statusWord == .success else {
            return try startListSelection(because: "the PPSE answered \(response.statusWord)")
        }
        let entries: [ApplicationCandidate]
        do { entries = try parsePPSE(response.data) } catch {
            return try startListSelection(because: "the PPSE is unusable (\(error.reason))")
        }
        let supported = entries.filter { e in configuration.supportedApplications.contains { $0.matches(e.aid) } }
        guard !supported.isEmpty else {
            throw KernelError(.noSupportedApplication, step: .ppse,
                              "the card offers \(entries.map { Hex.encode($0.aid) }.joined(separator: ", ")); "
                                + "the terminal supports none of them")
        }
        return try beginFinalSelection(ApplicationCandidate.ordered(supported), lastRejection: nil)
    }

    private mutating func startListSelection(because reason: String) throws(KernelError) -> Action {
        guard let first = configuration.supportedApplications.first else {
            throw KernelError(.noSupportedApplication, step: .ppse, "\(reason), and the terminal supports no AID")
        }
        state = .selectingFromList(ListSelection(
            current: first, nextOccurrence: false, pending: Array(configuration.supportedApplications.dropFirst()),
            seen: [], found: [], ppseFailure: reason, lastRejection: nil))
        return .send(.select(name: first.aid))
    }

    private mutating func listSelectionAnswered(_ s: ListSelection, _ response: ResponseAPDU) throws(KernelError) -> Action {
        var s = s
        let step = KernelStep.selectAID(s.current.aid)
        let sw = response.statusWord
        guard sw == .success || sw == .selectedFileInvalidated else {
            return try nextFromList(s)   // 6A82 and the like: not on this card
        }
        let fci: ApplicationFCI
        do { fci = try parseFCI(response.data, step: step) } catch {
            s.lastRejection = error
            return try nextFromList(s)
        }
        guard !s.seen.contains(fci.dfName), s.seen.count < Self.maxOccurrences else {
            return try nextFromList(s)
        }
        s.seen.append(fci.dfName)
        let exact = fci.dfName == s.current.aid
        guard exact || s.current.matches(fci.dfName) else {
            s.lastRejection = KernelError(.inconsistentData, step: step,
                                          "SELECT of \(Hex.encode(s.current.aid)) answered with DF name \(Hex.encode(fci.dfName))")
            return try nextFromList(s)
        }
        if sw == .success {   // 6283: the application is blocked; not a candidate
            s.found.append(ApplicationCandidate(aid: fci.dfName, label: fci.label, priority: fci.priority,
                                                position: s.found.count))
        }
        if exact { return try nextFromList(s) }
        s.nextOccurrence = true
        state = .selectingFromList(s)
        return .send(.select(name: s.current.aid, nextOccurrence: true))
    }

    private mutating func nextFromList(_ s: ListSelection) throws(KernelError) -> Action {
        var s = s
        guard !s.pending.isEmpty else {
            guard !s.found.isEmpty else {
                if let rejection = s.lastRejection { throw rejection }
                throw KernelError(.noSupportedApplication, step: .ppse,
                                  "\(s.ppseFailure), and none of the \(configuration.supportedApplications.count) "
                                    + "AIDs the terminal supports answered SELECT")
            }
            return try beginFinalSelection(ApplicationCandidate.ordered(s.found), lastRejection: s.lastRejection)
        }
        s.current = s.pending.removeFirst()
        s.nextOccurrence = false
        s.seen = []
        state = .selectingFromList(s)
        return .send(.select(name: s.current.aid))
    }

    private mutating func beginFinalSelection(_ candidates: [ApplicationCandidate],
                                              lastRejection: KernelError?) throws(KernelError) -> Action {
        guard let first = candidates.first else {
            if let lastRejection { throw lastRejection }
            throw KernelError(.noSupportedApplication, step: .ppse, "no candidate application is left")
        }
        state = .selectingApplication(FinalSelection(current: first, remaining: Array(candidates.dropFirst()),
                                                     lastRejection: lastRejection))
        return .send(.select(name: first.selectionName))
    }

    private mutating func finalSelectionAnswered(_ s: FinalSelection, _ response: ResponseAPDU) throws(KernelError) -> Action {
        let step = KernelStep.selectAID(s.current.aid)
        do throws(KernelError) {
            guard response.statusWord == .success else { throw KernelError.unexpected(response.statusWord, step: step) }
            let fci = try parseFCI(response.data, step: step)
            guard fci.dfName == s.current.aid || fci.dfName == s.current.selectionName else {
                throw KernelError(.inconsistentData, step: step,
                                  "SELECT of \(Hex.encode(s.current.aid)) answered with DF name \(Hex.encode(fci.dfName))")
            }
            let terminal = terminalValues
            let pdolData = fci.pdol.build { terminal[$0] }
            guard pdolData.count <= 253 else {
                throw KernelError(.malformedResponse, step: step,
                                  "the PDOL asks for \(pdolData.count) bytes; GET PROCESSING OPTIONS holds at most 253")
            }
            state = .gettingProcessingOptions(ProcessingOptionsRequest(
                application: SelectedApplication(candidate: s.current, fci: fci), remaining: s.remaining,
                pdolData: pdolData))
            return .send(.getProcessingOptions(pdolData: pdolData))
        } catch {
            // This application is out; the next candidate may do (EMV Book 1 §12.4).
            return try beginFinalSelection(s.remaining, lastRejection: error)
        }
    }

    // MARK: - GET PROCESSING OPTIONS

    private mutating func processingOptionsAnswered(_ r: ProcessingOptionsRequest,
                                                    _ response: ResponseAPDU) throws(KernelError) -> Action {
        if response.statusWord == .conditionsOfUseNotSatisfied {
            // EMV Book B §3.4: the application is removed and selection goes on with the next one.
            let refused = KernelError(.unexpectedStatus, step: .gpo,
                                      "the card refused application \(Hex.encode(r.application.fci.dfName)) "
                                        + "(\(response.statusWord)) and no other application is left",
                                      statusWord: response.statusWord)
            return try beginFinalSelection(r.remaining, lastRejection: refused)
        }
        guard response.statusWord == .success else { throw KernelError.unexpected(response.statusWord, step: .gpo) }
        let options = try parseProcessingOptions(response.data)
        var data = CardDataStore()
        try data.add(options.objects, step: .gpo)
        let remaining = AFLEntry.records(options.afl)
        guard !remaining.isEmpty else {
            return try recordsRead(RecordReading(application: r.application, aip: options.aip, afl: options.afl,
                                                 remaining: remaining, data: data, onlineDataWasReady: false,
                                                 pdolData: r.pdolData))
        }
        // Each reading is built where it goes (the state or the next command), not copied there.
        if let early = onlineData(data, aip: options.aip, application: r.application, building: handsOutOnlineData) {
            let reading = RecordReading(application: r.application, aip: options.aip, afl: options.afl,
                                        remaining: remaining, data: data, onlineDataWasReady: true,
                                        knownTrack2: early.card?.track2, pdolData: r.pdolData)
            guard handsOutOnlineData else { return sendRecord(reading) }
            state = .onlineDataReady(reading)
            return .onlineDataReady(early)
        }
        return sendRecord(RecordReading(application: r.application, aip: options.aip, afl: options.afl,
                                        remaining: remaining, data: data, onlineDataWasReady: false,
                                        pdolData: r.pdolData))
    }

    /// The online data, when the GPO answer already holds an ARQC and the PAN and expiry (track 2).
    /// `building` false: whether it would be, the cryptogram's online data left empty.
    private func onlineData(_ data: CardDataStore, aip: [UInt8], application: SelectedApplication,
                            building: Bool) -> PartialCardRead? {
        guard data.contains(.applicationCryptogram),
              let card = try? cardData(data),
              let cvm = try? CVMProcessing.decide(store: data, aip: aip, kernel: application.kernel, configuration: configuration,
                                                  transaction: transaction) else { return nil }
        var terminal = terminalValues
        terminal[.cvmResults] = cvm.results
        guard let cryptogram = try? makeCryptogram(data, application: application, terminal: terminal,
                                                   source: .gpo, step: .gpo, withOnlineData: building),
              cryptogram.kind == .arqc else { return nil }
        return PartialCardRead(step: .gpo, application: application.info(aip: aip), card: card,
                               cryptogram: cryptogram, cvm: cvm.cvm, onlineDataWasReady: true)
    }

    // MARK: - READ RECORD

    private mutating func sendRecord(_ r: consuming RecordReading) -> Action {
        let next = r.remaining[0]
        state = .readingRecords(r)
        return .send(.readRecord(next.record, sfi: next.sfi))
    }

    /// Adds the record's objects to `r`; nil when a record is left to read (``sendRecord(_:)``),
    /// else what follows the last one.
    private mutating func recordAnswered(_ r: inout RecordReading, _ response: ResponseAPDU) throws(KernelError) -> Action? {
        let step = r.remaining[0].step
        guard response.statusWord == .success else { throw KernelError.unexpected(response.statusWord, step: step) }
        let record = try parseTemplate(response.data, .readRecordResponseTemplate, step: step, what: "the record")
        try r.data.add(record.children, step: step)
        if AFLEntry.isMarkedForODA(r.remaining[0], in: r.afl) {
            // Book 3 §10.3: SFI 1-10 give the template's value, SFI 11-30 the whole record.
            if r.remaining[0].sfi <= 10 { r.staticData += record.valueBytes } else { r.staticData += response.data }
        }
        r.remaining.removeFirst()
        guard r.remaining.isEmpty else { return nil }
        return try recordsRead(r)
    }

    /// Every record is read: check the card data, decide the CVM, and finish or ask for an ARQC.
    private mutating func recordsRead(_ r: RecordReading) throws(KernelError) -> Action {
        let card = try cardData(r.data, knownTrack2: r.knownTrack2)
        let cvm = try CVMProcessing.decide(store: r.data, aip: r.aip, kernel: r.application.kernel, configuration: configuration,
                                           transaction: transaction)
        terminalValues[.cvmResults] = cvm.results
        if r.application.kernel == .c2, var capabilities = terminalValues[.terminalCapabilities] {
            // C-2 sends the CVM capability it used as terminal capabilities byte 2 (Book C-2 §3.2).
            capabilities[1] = kernelRequiresCVM(r) ? configuration.cvmCapabilityCVMRequired
                                                   : configuration.cvmCapabilityNoCVMRequired
            terminalValues[.terminalCapabilities] = capabilities
        }
        if r.data.contains(.applicationCryptogram) {
            // The TVR stays as the card saw it in the PDOL data: it is part of the cryptogram.
            let cryptogram = try makeCryptogram(r.data, application: r.application, terminal: terminalValues,
                                                source: .gpo, step: .cardData)
            var read = CardRead(application: r.application.info(aip: r.aip), card: card, cryptogram: cryptogram,
                                cvm: cvm.cvm, cardDataObjects: r.data.objects, cvmDecision: cvm)
            read.oda = authenticateGPOCryptogram(r, pan: card.pan)
            return conclude(read, onlineDataWasReady: r.onlineDataWasReady)
        }
        // ODA before GENERATE AC: SDA whole, CDA's certificates, DDA's INTERNAL AUTHENTICATE; the
        // TVR it leaves goes in CDOL1.
        switch authenticateBeforeGenerateAC(r, pan: card.pan) {
        case .done(let oda, let cdaKey):
            return try requestCryptogram(r, card: card, cvm: cvm, oda: oda, cdaKey: cdaKey)
        case .internalAuthenticate(let ddolData, let oda, let key):
            state = .authenticating(DynamicAuthentication(reading: r, card: card, cvmDecision: cvm, ddolData: ddolData,
                                                          oda: oda, key: key))
            return .send(.internalAuthenticate(ddolData: ddolData))
        }
    }

    // MARK: - INTERNAL AUTHENTICATE

    /// DDA's signature checked (or failed: the TVR bit, then GENERATE AC all the same, Book 3
    /// §10.3: the issuer judges); the ICC dynamic number it held joins the card's data (9F4C, which
    /// CDOL1 may ask for).
    private mutating func dynamicSignatureAnswered(_ a: DynamicAuthentication,
                                                   _ response: ResponseAPDU) throws(KernelError) -> Action {
        var r = a.reading
        let (oda, dynamicNumber) = verifyDDA(response, request: a)
        if let dynamicNumber, !r.data.contains(.iccDynamicNumber) {
            try r.data.add([TLV(tag: .iccDynamicNumber, value: dynamicNumber)], step: .internalAuthenticate)
        }
        return try requestCryptogram(r, card: a.card, cvm: a.cvmDecision, oda: oda, cdaKey: nil)
    }

    // MARK: - GENERATE AC

    /// GENERATE AC for an ARQC (with CDA when `cdaKey`), the TVR holding what ODA found.
    private mutating func requestCryptogram(_ r: RecordReading, card: CardData, cvm: CVMDecision, oda: ODAResult,
                                            cdaKey: RSAPublicKey?) throws(KernelError) -> Action {
        // "Not performed" (set from the start) gives way to the method's own bits.
        terminalValues[.terminalVerificationResults]![0] = terminalValues[.terminalVerificationResults]![0] & ~TVR1.notPerformed
            | oda.tvrByte1
        if cvm.cvm == .failed { terminalValues[.terminalVerificationResults]![2] |= 0x80 }  // CVM not successful
        guard let cdolBytes = r.data[.cdol1] else {
            throw KernelError(.missingMandatoryData, step: .generateAC,
                              "the card gave no cryptogram in its GPO answer and no CDOL1 8C to ask for one")
        }
        let cdol: DataObjectList
        do { cdol = try DataObjectList(bytes: cdolBytes) } catch {
            throw KernelError(.malformedResponse, step: .generateAC, "CDOL1 8C is not a data object list: \(error)")
        }
        let terminal = terminalValues, store = r.data
        let cdolData = cdol.build { terminal[$0] ?? store[$0] }
        guard cdolData.count <= 255 else {
            throw KernelError(.malformedResponse, step: .generateAC,
                              "CDOL1 asks for \(cdolData.count) bytes; GENERATE AC holds at most 255")
        }
        state = .generatingAC(CryptogramRequest(application: r.application, aip: r.aip, data: r.data, card: card,
                                                cvm: cvm.cvm, cvmDecision: cvm, cdolData: cdolData, oda: oda,
                                                cdaKey: cdaKey, pdolData: r.pdolData))
        return .send(.generateAC(.arqc, cda: cdaKey != nil, cdolData: cdolData))
    }

    private mutating func cryptogramAnswered(_ r: CryptogramRequest, _ response: ResponseAPDU) throws(KernelError) -> Action {
        guard response.statusWord == .success else {
            throw KernelError.unexpected(response.statusWord, step: .generateAC)
        }
        var data = r.data
        let answer = try parseGenerateAC(response.data, cda: r.cdaKey != nil)
        try data.add(answer, step: .generateAC)
        var oda = r.oda
        if let key = r.cdaKey {
            oda = verifyCDA(answer, key: key, request: r, data: &data)
            terminalValues[.terminalVerificationResults]![0] = terminalValues[.terminalVerificationResults]![0] & ~TVR1.notPerformed
                | oda.tvrByte1
            if case .failed(let reason) = oda.signature, !data.contains(.applicationCryptogram) {
                // The AC is inside a signature that failed: there is no cryptogram to send online.
                var error = KernelError(.cardDeclinedOffline, step: .generateAC, "the reader declined offline: CDA failed: \(reason)")
                error.partial = PartialCardRead(step: .generateAC, application: r.application.info(aip: r.aip), card: r.card,
                                                cvm: r.cvm)
                error.partial?.oda = oda
                throw error
            }
        }
        let cryptogram = try makeCryptogram(data, application: r.application, terminal: terminalValues,
                                            source: .generateAC, step: .generateAC)
        guard cryptogram.kind != .tc else {
            throw KernelError(.inconsistentData, step: .generateAC, "the card returned a TC when an ARQC was asked for")
        }
        var read = CardRead(application: r.application.info(aip: r.aip), card: r.card, cryptogram: cryptogram,
                            cvm: r.cvm, cardDataObjects: data.objects, cvmDecision: r.cvmDecision)
        read.oda = oda
        return conclude(read, onlineDataWasReady: false)
    }

    private func kernelRequiresCVM(_ r: RecordReading) -> Bool {
        let kernel = r.application.kernel
        return kernel.requiresCVM(amount: transaction.amount, limit: configuration.cvmRequiredLimit(for: kernel))
    }

    private mutating func conclude(_ read: consuming CardRead, onlineDataWasReady: Bool) -> Action {
        state = .done
        // An offline decline at the step that brought the cryptogram, with all that was read.
        func declinedOffline(_ reason: String) -> Action {
            var error = KernelError(.cardDeclinedOffline, step: read.cryptogram.source == .gpo ? .gpo : .generateAC, reason)
            error.partial = PartialCardRead(step: error.step, application: read.application, card: read.card,
                                            cryptogram: read.cryptogram, cvm: read.cvm,
                                            onlineDataWasReady: onlineDataWasReady)
            error.partial?.oda = read.oda
            return .fail(error)
        }
        if let reason = Self.readerDeclines(read) {
            return declinedOffline("the reader declined offline: \(reason)")
        }
        guard read.cryptogram.kind != .aac else {
            return declinedOffline("the card declined offline (AAC, CID \(Hex.encode([read.cryptogram.cid])))")
        }
        return .complete(read)
    }

    // MARK: - Card data

    /// PAN, expiry and the rest, from 5A / 5F24 or else track 2, checked against each other.
    /// `knownTrack2`: track 2 parsed before, taken as it is when 57 holds its bytes.
    func cardData(_ d: CardDataStore, knownTrack2: Track2? = nil) throws(KernelError) -> CardData {
        let step = KernelStep.cardData
        var track2: Track2?
        if let t = d[.track2EquivalentData], let known = knownTrack2, known.bytes == t {
            track2 = known
        } else if let t = d[.track2EquivalentData] {
            do { track2 = try Track2(bytes: t) } catch {
                throw KernelError(.malformedResponse, step: step, "track 2 equivalent data 57 is malformed: \(error.reason)")
            }
        }
        let pan: PAN
        if let p = d[.pan] {
            do { pan = try PAN(bcd: p) } catch {
                throw KernelError(.malformedResponse, step: step, "the PAN 5A is malformed: \(error.reason)")
            }
            if let track2, track2.pan != pan {
                throw KernelError(.inconsistentData, step: step, "the PAN 5A differs from track 2's")
            }
        } else if let track2 {
            pan = track2.pan
        } else {
            throw KernelError(.missingMandatoryData, step: step, "the card gave no PAN 5A and no track 2 equivalent data 57")
        }
        let expiry: Expiry
        let track2Expiry = try track2.map { t throws(KernelError) -> Expiry in
            guard let e = Expiry(yymm: t.expiry) else {
                throw KernelError(.malformedResponse, step: step, "track 2 holds no valid expiry month")
            }
            return e
        }
        if let e = d[.applicationExpirationDate] {
            guard e.count == 3, let v = BCD.value(e), (1...12).contains(v / 100 % 100) else {
                throw KernelError(.malformedResponse, step: step, "the expiry date 5F24 is not a YYMMDD date")
            }
            expiry = Expiry(year: 2000 + Int(v / 10_000), month: Int(v / 100 % 100))
            if let track2Expiry, track2Expiry != expiry {
                throw KernelError(.inconsistentData, step: step, "the expiry date 5F24 differs from track 2's")
            }
        } else if let track2Expiry {
            expiry = track2Expiry
        } else {
            throw KernelError(.missingMandatoryData, step: step, "the card gave no expiry date 5F24 and no track 2")
        }
        var psn: Int?
        if let p = d[.panSequenceNumber] {
            guard p.count == 1, let v = BCD.value(p) else {
                throw KernelError(.malformedResponse, step: step, "the PAN sequence number 5F34 is not one BCD byte")
            }
            psn = Int(v)
        }
        let name = d[.cardholderName].map { text($0) }.flatMap { $0.isEmpty ? nil : $0 }
        return CardData(pan: pan, expiry: expiry, panSequenceNumber: psn, cardholderName: name, track2: track2,
                        issuerCountryCode: d[.issuerCountryCode].flatMap { ISOCodes.numericCode(bcd: $0) },
                        applicationCurrencyCode: d[.applicationCurrencyCode].flatMap { ISOCodes.numericCode(bcd: $0) })
    }

    /// The cryptogram from the card's data objects (9F26, 9F27, 9F36, 9F10).
    func makeCryptogram(_ d: CardDataStore, application: SelectedApplication, terminal: TerminalValues,
                        source: Cryptogram.Source, step: KernelStep,
                        withOnlineData: Bool = true) throws(KernelError) -> Cryptogram {
        guard let ac = d[.applicationCryptogram] else {
            throw KernelError(.missingMandatoryData, step: step, "the card gave no application cryptogram 9F26")
        }
        guard ac.count == 8 else {
            throw KernelError(.malformedResponse, step: step, "the application cryptogram 9F26 is \(ac.count) byte(s), not 8")
        }
        let cid: UInt8
        if let c = d[.cryptogramInformationData] {
            guard c.count == 1 else {
                throw KernelError(.malformedResponse, step: step, "the CID 9F27 is \(c.count) byte(s), not 1")
            }
            cid = c[0]
        } else {
            cid = 0x80   // qVSDC cards may leave the CID out of the GPO answer: an online cryptogram
        }
        let kind: Cryptogram.Kind
        switch cid & 0xC0 {
        case 0x00: kind = .aac
        case 0x40: kind = .tc
        case 0x80: kind = .arqc
        default:
            throw KernelError(.malformedResponse, step: step, "the CID \(Hex.encode([cid])) names a reserved cryptogram type")
        }
        guard let atc = d[.applicationTransactionCounter] else {
            throw KernelError(.missingMandatoryData, step: step, "the card gave no application transaction counter 9F36")
        }
        guard atc.count == 2 else {
            throw KernelError(.malformedResponse, step: step, "the ATC 9F36 is \(atc.count) byte(s), not 2")
        }
        var online: [TLV] = []
        if withOnlineData {
            var requested = application.fci.pdol.entries.map(\.tag)
            if let c = d[.cdol1], let cdol = try? DataObjectList(bytes: c) { requested += cdol.entries.map(\.tag) }
            online = TerminalData.onlineData(store: d, dfName: application.fci.dfName, terminal: terminal,
                                             cid: cid, requested: requested)
        }
        return Cryptogram(cid: cid, kind: kind, atc: UInt16(atc[0]) << 8 | UInt16(atc[1]), ac: ac,
                          iad: d[.issuerApplicationData] ?? [], unpredictableNumber: terminal[.unpredictableNumber] ?? [],
                          source: source, onlineData: online)
    }

    // MARK: - What is known

    private func partialRead(of state: State) -> PartialCardRead {
        switch state {
        case .idle, .done:
            return PartialCardRead()
        case .selectingPPSE, .selectingFromList, .selectingApplication:
            return PartialCardRead(step: currentStep(of: state))
        case .gettingProcessingOptions(let r):
            return PartialCardRead(step: .gpo, application: r.application.info(aip: []))
        case .readingRecords(let r), .onlineDataReady(let r):
            var terminal = terminalValues
            let cvm = try? CVMProcessing.decide(store: r.data, aip: r.aip, kernel: r.application.kernel, configuration: configuration,
                                                transaction: transaction)
            if let cvm { terminal[.cvmResults] = cvm.results }
            return PartialCardRead(
                step: r.remaining.first?.step, application: r.application.info(aip: r.aip), card: try? cardData(r.data),
                cryptogram: r.data.contains(.applicationCryptogram)
                    ? try? makeCryptogram(r.data, application: r.application, terminal: terminal, source: .gpo, step: .gpo)
                    : nil,
                cvm: cvm?.cvm, onlineDataWasReady: r.onlineDataWasReady)
        case .authenticating(let a):
            var partial = PartialCardRead(step: .internalAuthenticate, application: a.reading.application.info(aip: a.reading.aip),
                                          card: a.card, cvm: a.cvmDecision.cvm, onlineDataWasReady: a.reading.onlineDataWasReady)
            partial.oda = a.oda
            return partial
        case .generatingAC(let r):
            // What ODA found before GENERATE AC (SDA, DDA, CDA's certificates) outlives a failure of it.
            var partial = PartialCardRead(step: .generateAC, application: r.application.info(aip: r.aip), card: r.card,
                                          cvm: r.cvm)
            partial.oda = r.oda
            return partial
        }
    }

    private func currentStep(of state: State) -> KernelStep? {
        var copy = self
        copy.state = state
        return copy.currentStep
    }
}

extension EMVKernel.RecordReading: CustomReflectable {
    /// The public properties (the track 2 kept for reuse is a cache, not state).
    public var customMirror: Mirror {
        Mirror(self, children: ["application": application, "aip": aip, "afl": afl, "remaining": remaining,
                                "data": data, "onlineDataWasReady": onlineDataWasReady], displayStyle: .struct)
    }
}
