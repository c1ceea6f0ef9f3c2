public import VirtualCard

/// The card side of a conversation: what ``VPCDCardServer`` serves into a vpcd reader slot.
///
/// ``EmulatedCard`` is one; the card side of a recorded trace is another.
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

extension EmulatedCard: CardResponder {}
