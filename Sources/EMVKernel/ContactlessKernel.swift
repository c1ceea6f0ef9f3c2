import ISO7816
public import PaymentRules
/// The EMV contactless kernel an application runs under, and how that kernel reads the data
/// objects whose meaning differs from one kernel's book to another's.
///
/// Which kernel: the Kernel Identifier (9F2A) of the application's PPSE entry when the card gives
/// one, else the default kernel of the AID's scheme (EMV Contactless Book B §3.3.2.5 and
/// Table 3-6). Byte 1 bits 8-7 of 9F2A say what the rest is: `00` an international kernel
/// whose number is bits 6-1 (`00` itself: "use the default"); `10` and `11` a domestic kernel
/// (EMVCo format or proprietary), named further by bytes 2-3.
public struct ContactlessKernel: Hashable, Sendable, CustomStringConvertible {
    /// The international kernel number (1 to 7), or 0 for a domestic kernel or none.
    public var id: UInt8
    /// The Kernel Identifier of a domestic kernel, as the card gave it.
    public var domesticIdentifier: [UInt8]?

    public init(id: UInt8, domesticIdentifier: [UInt8]? = nil) {
        self.id = id
        self.domesticIdentifier = domesticIdentifier
    }

    /// The kernel of an application: its 9F2A when usable, else its scheme's default.
    public init(kernelIdentifier: [UInt8]?, brand: PaymentNetwork) {
        if let k = kernelIdentifier, let first = k.first {
            switch first >> 6 {
            case 0b00 where first & 0x3F != 0:
                self.init(id: first & 0x3F)
                return
            case 0b10, 0b11:
                self.init(id: 0, domesticIdentifier: k)
                return
            default:
                break   // 00: the default kernel; 01: RFU, treated as absent
            }
        }
        self.init(id: brand.defaultKernelID)
    }

    public static let c1 = ContactlessKernel(id: 1)
    public static let c2 = ContactlessKernel(id: 2)
    public static let c3 = ContactlessKernel(id: 3)
    public static let c4 = ContactlessKernel(id: 4)
    public static let c5 = ContactlessKernel(id: 5)
    public static let c6 = ContactlessKernel(id: 6)
    public static let c7 = ContactlessKernel(id: 7)

    /// For people: `C-2 (Mastercard)`, `domestic kernel 810001`, `EMV (no contactless kernel)`.
    public var description: String {
        if let d = domesticIdentifier { return "domestic kernel \(Hex.encode(d))" }
        switch id {
        case 1: return "C-1 (Visa/JCB legacy)"
        case 2: return "C-2 (Mastercard)"
        case 3: return "C-3 (Visa)"
        case 4: return "C-4 (American Express)"
        case 5: return "C-5 (JCB)"
        case 6: return "C-6 (Discover)"
        case 7: return "C-7 (UnionPay)"
        default: return "none named (EMV Book 3 rules)"
        }
    }

    /// Whether 9F6C is the Card Transaction Qualifiers in this kernel's book: Book C-3 Annex A.2
    /// (and C-1, which shares it), Book C-7 Annex A. Elsewhere 9F6C means something else — in
    /// Book C-2 it is the Mag-stripe Application Version Number (Card) — or nothing, and its
    /// value says nothing about the CVM.
    public var definesCardTransactionQualifiers: Bool {
        domesticIdentifier == nil && (id == 1 || id == 3 || id == 7)
    }

    /// Whether the reader's CVM capability follows the amount: above the reader CVM required
    /// limit the terminal offers the methods of "CVM Capability – CVM Required" (DF8118), at or
    /// below it those of "CVM Capability – No CVM Required" (DF8119), and runs the card's CVM
    /// list with them (Book C-2 §3.2 and §7.5, CVM Selection). tapemu applies the same to the
    /// kernels that read the CVM list without a book of their own here (C-4, C-5, C-6, domestic
    /// kernels, none).
    public var followsCVMListWithLimitCapability: Bool { !definesCardTransactionQualifiers }

    /// Whether a cardholder verification is required at `amount` for a reader CVM required limit
    /// of `limit`. The kernels that take it from Entry Point's TTQ compare "greater than or
    /// equal" (Book A §5.2.2); C-2 compares "greater than" (Book C-2 §3.2), and so does tapemu
    /// for the other CVM-list kernels.
    public func requiresCVM(amount: UInt64, limit: UInt64) -> Bool {
        definesCardTransactionQualifiers ? amount >= limit : amount > limit
    }
}
