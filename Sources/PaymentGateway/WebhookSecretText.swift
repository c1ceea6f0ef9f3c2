extension WebhookSignature {
    /// The signing secret as `tapemu gateway secret` prints it: 64 lower-case hex digits.
    public static func secretText(_ secret: [UInt8]) -> String { Encoding.hex(secret) }

    /// The HMAC key of a secret given as text: 64 hex digits are the 32 bytes they encode
    /// (what ``secretText(_:)`` prints); any other text is its UTF-8 bytes (a secret another
    /// signer gave as a string).
    public static func secretBytes(_ text: String) -> [UInt8] {
        if text.utf8.count == 64, let bytes = Encoding.unhex(text) { return bytes }
        return Array(text.utf8)
    }
}
