/// The built-in virtual cards. Each is data — JSON in its own file under `Profiles/`, in the
/// shape ``CardProfile/load(contentsOf:)`` reads, or a variant of one (`Profiles/*.swift`) — and
/// every PAN is from a public test range.
public enum CardProfiles {
    /// Every built-in profile, in the order `tapemu cards` lists them.
    public static var all: [CardProfile] { builtIns }

    /// The built-in profile called `name`, or nil.
    public static func named(_ name: String) -> CardProfile? {
        builtIns.first { $0.name == name }
    }

    /// The built-in profile called `name`; `.unknownProfile` (listing the names) otherwise.
    public static func profile(named name: String) throws(VirtualCardError) -> CardProfile {
        guard let p = named(name) else {
            throw VirtualCardError(.unknownProfile,
                                   "no card profile '\(name)' (known: \(builtIns.map(\.name).joined(separator: ", ")))")
        }
        return p
    }

    /// The issuer master key of the built-in profile whose application has `pan`, for an emulated
    /// issuer that verifies cryptograms; nil when no built-in card has that PAN.
    public static func issuerMasterKey(forPANDigits digits: String) -> [UInt8]? {
        for p in builtIns where p.applications.contains(where: { $0.pan.digits == digits }) {
            return p.issuerMasterKey
        }
        return nil
    }

    static let builtIns: [CardProfile] = [
        visaQVSDC, mastercardMChip, amex, twoApps, noPPSE, chained, offlineDecline, slow, torn, mute, visaOnlinePIN,
        visaCDCVM, mastercardCVMList, girocard, maestro, jcb, unionPay, noPPSEPartial,
        odaExpiredIssuerCertificate, odaWrongHash, odaRevokedCertificate, odaMissingRecord, odaTamperedSDAD, odaCDAMismatch,
        mastercardMChipDDA, odaDDATamperedSDAD,
    ]

    /// The profiles the others derive from, as data: `Profiles/*.json`, the same JSON a user
    /// profile file holds, compiled into the module (nothing is read from disk at run time).
    static let visaQVSDC = builtIn(PackageResources.visa_qvsdc_json, "visa-qvsdc.json")
    static let mastercardMChip = builtIn(PackageResources.mastercard_mchip_json, "mastercard-mchip.json")
    static let amex = builtIn(PackageResources.amex_json, "amex.json")
    static let maestro = builtIn(PackageResources.maestro_json, "maestro.json")
    static let girocard = builtIn(PackageResources.girocard_json, "girocard.json")

    /// Decodes a built-in profile. A built-in that does not load is our own bug: it traps (and the
    /// tests load every one).
    static func builtIn(_ json: [UInt8], _ file: String) -> CardProfile {
        do {
            return try CardProfile.decode(json: json, source: "built-in profile \(file)")
        } catch {
            fatalError("a built-in card profile does not load: \(error)")
        }
    }
}
