public import CardChannel

/// The least time ISO/IEC 14443 type A at 106 kbit/s needs on the air to carry an exchange's
/// bytes: the on-air floor. No reader, card or host can do a contactless read faster than this;
/// `tapemu bench` prints it next to the measured time so "where does the time go" has a bottom.
///
/// Everything is counted in carrier cycles (1/fc, fc = 13.56 MHz), exactly, and turned into a
/// `Duration` at the end.
///
/// The constants, and where they come from:
/// - **etu** (ISO/IEC 14443-2, 106 kbit/s): one bit is 128/fc ≈ 9.44 µs.
/// - **A byte is 9 etu** (ISO/IEC 14443-3, standard frame): 8 data bits and an odd parity bit,
///   1 152/fc ≈ 84.96 µs.
/// - **Start and end of frame, 2 etu** per frame: the start of communication is 1 etu; the end
///   of communication is at least 1 etu (the reader's is longer; 1 etu keeps this a floor).
/// - **ISO-DEP framing, 3 bytes per block** (ISO/IEC 14443-4): the PCB and the two bytes of
///   CRC_A. CID and NAD are optional and left out (a floor again).
/// - **Chaining above the frame size**: with FSC = FSD = 256 bytes (FSCI = FSDI = 8), a block
///   carries at most 256 − 3 = 253 bytes of APDU (INF). A longer APDU goes as a chain of
///   I-blocks, each but the last acknowledged by an R(ACK) block from the other side (3 bytes:
///   PCB + CRC_A), which costs a frame and two frame delays per extra block.
/// - **Frame delay PCD → PICC** (ISO/IEC 14443-3, FDT with n = 9): the card starts answering at
///   least (9·128 + 20)/fc = 1 172/fc ≈ 86.4 µs after the end of the reader's frame
///   ((9·128 + 84)/fc = 1 236/fc when the frame's last bit is 1; the floor takes the smaller).
/// - **Frame delay PICC → PCD** (ISO/IEC 14443-3): the reader waits at least 1 172/fc after the
///   end of the card's frame before its next frame.
///
/// So, for a command of `c` bytes answered by `r` bytes (data + SW1 SW2), with
/// `k = max(1, ⌈c / 253⌉)` command blocks and `m = max(1, ⌈r / 253⌉)` response blocks:
///
/// ```
/// frame(n bytes)  = (9·n + 2) · 128 cycles
/// exchange(c, r)  = Σ frame(INF_i + 3) over the k command blocks and the m response blocks
///                 + (k − 1 + m − 1) · frame(3)                 R(ACK) blocks
///                 + (k + m − 1) · 1 172                        frame delays PCD → PICC
///                 + (k − 1 + m − 1) · 1 172                    frame delays PICC → PCD
/// read            = Σ exchange + (exchanges − 1) · 1 172       between one answer and the next command
/// ```
/// A SELECT of the PPSE (20 bytes) answered by 2 bytes: (9·23 + 2)·128 + 1 172 + (9·5 + 2)·128 =
/// 33 940 cycles ≈ 2.503 ms. Activation (REQA, anticollision, RATS) happens before the first
/// APDU and is not counted; neither are waiting-time extensions or retransmissions.
public struct ContactlessAirTime: Hashable, Sendable {
    /// The carrier frequency fc, in hertz.
    public static let carrierFrequency = 13_560_000
    /// One etu at 106 kbit/s, in carrier cycles (128/fc).
    public static let cyclesPerETU = 128
    /// etu per byte: 8 data bits and odd parity.
    public static let etuPerByte = 9
    /// etu of start and end of communication per frame.
    public static let frameDelimiterETU = 2
    /// Bytes of ISO-DEP framing per block: PCB and CRC_A.
    public static let blockFramingBytes = 3
    /// Minimum frame delay time PCD → PICC, in carrier cycles (n = 9, last bit 0).
    public static let frameDelayPCDToPICC = 1_172
    /// Minimum frame delay time PICC → PCD, in carrier cycles.
    public static let frameDelayPICCToPCD = 1_172

    /// The frame size of both sides (FSC for what the reader sends, FSD for what the card sends).
    public var frameSize: Int

    /// - Parameter frameSize: FSC = FSD in bytes (16 ... 4096; 256 by default, FSCI 8).
    public init(frameSize: Int = 256) {
        precondition(frameSize > Self.blockFramingBytes, "a frame must hold more than its framing")
        self.frameSize = frameSize
    }

    /// The most APDU bytes one block carries.
    public var maxINF: Int { frameSize - Self.blockFramingBytes }

    /// Carrier cycles of one frame of `bytes` bytes (framing included).
    public static func frameCycles(bytes: Int) -> Int {
        (etuPerByte * bytes + frameDelimiterETU) * cyclesPerETU
    }

    /// Carrier cycles from the start of the command's first frame to the end of the response's
    /// last frame, for a command of `commandLength` bytes answered by `responseLength` bytes
    /// (data + SW1 SW2).
    public func exchangeCycles(commandLength: Int, responseLength: Int) -> Int {
        let c = max(0, commandLength), r = max(0, responseLength)
        let k = max(1, (c + maxINF - 1) / maxINF)
        let m = max(1, (r + maxINF - 1) / maxINF)
        // Blocks: every block is full but the last; the INF bytes add up to c and r.
        let informationFrames = (c + k * Self.blockFramingBytes) * Self.etuPerByte * Self.cyclesPerETU
            + (r + m * Self.blockFramingBytes) * Self.etuPerByte * Self.cyclesPerETU
            + (k + m) * Self.frameDelimiterETU * Self.cyclesPerETU
        let acknowledgements = (k - 1 + m - 1) * Self.frameCycles(bytes: Self.blockFramingBytes)
        let delays = (k + m - 1) * Self.frameDelayPCDToPICC + (k - 1 + m - 1) * Self.frameDelayPICCToPCD
        return informationFrames + acknowledgements + delays
    }

    /// The floor of one exchange.
    public func exchange(commandLength: Int, responseLength: Int) -> Duration {
        Self.duration(cycles: exchangeCycles(commandLength: commandLength, responseLength: responseLength))
    }

    /// The floor of one exchange; a failed one (no response) counts the command only.
    public func exchange(_ exchange: Exchange) -> Duration {
        Self.duration(cycles: cycles(exchange))
    }

    /// The floor of a read made of `exchanges`, including the delay before each command after
    /// the first.
    public func read(_ exchanges: [Exchange]) -> Duration {
        guard !exchanges.isEmpty else { return .zero }
        let total = exchanges.reduce(0) { $0 + cycles($1) } + (exchanges.count - 1) * Self.frameDelayPICCToPCD
        return Self.duration(cycles: total)
    }

    /// The floor of a read of exchanges of these lengths (command, response).
    public func read(lengths: [(command: Int, response: Int)]) -> Duration {
        guard !lengths.isEmpty else { return .zero }
        let total = lengths.reduce(0) { $0 + exchangeCycles(commandLength: $1.command, responseLength: $1.response) }
            + (lengths.count - 1) * Self.frameDelayPICCToPCD
        return Self.duration(cycles: total)
    }

    private func cycles(_ exchange: Exchange) -> Int {
        guard let response = exchange.response else {
            // Only the command went out.
            let c = exchange.command.bytes.count
            let k = max(1, (c + maxINF - 1) / maxINF)
            return (c + k * Self.blockFramingBytes) * Self.etuPerByte * Self.cyclesPerETU
                + k * Self.frameDelimiterETU * Self.cyclesPerETU
                + (k - 1) * (Self.frameCycles(bytes: Self.blockFramingBytes) + Self.frameDelayPCDToPICC + Self.frameDelayPICCToPCD)
        }
        return exchangeCycles(commandLength: exchange.command.bytes.count, responseLength: response.data.count + 2)
    }

    /// `cycles` carrier cycles as a duration (to the nanosecond).
    public static func duration(cycles: Int) -> Duration {
        // cycles · 10⁹ / fc, rounded to the nearest nanosecond, in integers.
        let (q, r) = (cycles * 1_000_000_000).quotientAndRemainder(dividingBy: carrierFrequency)
        return .nanoseconds(q + (2 * r >= carrierFrequency ? 1 : 0))
    }
}
