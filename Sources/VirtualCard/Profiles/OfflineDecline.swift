import BERTLV
import PaymentRules

// Built-in profile `offline-decline`: `mastercard-mchip` with its own PAN, ATC and issuer
// application data, whose GENERATE AC answers an AAC.

extension CardProfiles {
    static let offlineDecline = mastercardMChip.variant(
        name: "offline-decline",
        summary: "Mastercard M/Chip whose issuer declines offline: GENERATE AC answers an AAC (CID 00)",
        atc: 90, pan: PAN("5413330089020011")!)
        .changing {
            $0.applications[0].issuerApplicationData = [0x01, 0x10, 0x25, 0x00, 0x00, 0x04] + [UInt8](repeating: 0, count: 11) + [0xFF]
            $0.behaviour.declinesOffline = true
        }
}
