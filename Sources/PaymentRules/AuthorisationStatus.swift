/// The issuer's decision on an authorisation: what the gateway answers, and what the device's
/// record of a payment keeps of that answer (so the device's store needs no gateway to read it).
public enum AuthorisationStatus: String, Sendable, Hashable, Codable {
    case approved
    case declined
}
