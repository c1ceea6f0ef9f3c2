/// The card side of a conversation: command bytes in, the card's reply out, with no I/O and no
/// clock. One type serves every place a card is played: ``ResponderChannel`` (in process),
/// `VPCDCardServer` (module `PCSC`: into a vpcd reader slot).
///
/// `EmulatedCard` (module `VirtualCard`) is one; the card side of a recorded trace (module
/// `APDUTrace`) is another.
public protocol CardResponder: Sendable {
    /// The ATR the reader reports for this card.
    var atr: [UInt8] { get }
    /// The card enters the field, or is reset: nothing selected, answering again.
    func powerOn()
    /// Power goes away (vpcd's power-off). Default: nothing.
    func powerOff()
    /// One command APDU in, the card's reply out.
    func process(_ command: [UInt8]) -> CardReply
}

extension CardResponder {
    public func powerOff() {}
}
