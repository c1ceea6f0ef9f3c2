import BERTLV

/// ISO 3166-1 numeric country codes and ISO 4217 numeric currency codes, as EMV writes them
/// (n 3 in two bytes of BCD: `0978`). A table of the common ones; others fall back to the number.
public enum ISOCodes {
    /// A country by its numeric code.
    public struct Country: Hashable, Sendable {
        public var numeric: Int
        public var alpha3: String
        public var name: String
    }

    /// A currency by its numeric code, with its minor-unit exponent.
    public struct Currency: Hashable, Sendable {
        public var numeric: Int
        public var code: String
        /// Digits after the decimal point (2 for EUR, 0 for JPY, 3 for KWD).
        public var exponent: Int
        public var name: String

        public init(numeric: Int, code: String, exponent: Int, name: String) {
            self.numeric = numeric
            self.code = code
            self.exponent = exponent
            self.name = name
        }
    }

    public static func country(_ numeric: Int) -> Country? { countryTable[numeric] }
    public static func currency(_ numeric: Int) -> Currency? { currencyTable[numeric] }

    /// The number of a code as EMV writes it (n 3: exactly two BCD bytes, `0978`), or nil when
    /// the bytes are anything else — more or fewer bytes, a nibble above 9, a value above 999.
    /// Every country or currency code that comes from a card or a trace goes through here, so
    /// no caller converts an arbitrary BCD value to a fixed-width integer.
    public static func numericCode(bcd bytes: some Collection<UInt8>) -> Int? {
        guard bytes.count == 2, let v = BCD.value(bytes), v <= 999 else { return nil }
        return Int(v)
    }

    /// ``numericCode(bcd:)`` for an array (specialised here, not called generically from other
    /// modules: the kernel reads two codes per card).
    public static func numericCode(bcd bytes: [UInt8]) -> Int? {
        guard bytes.count == 2, let v = BCD.value(bytes), v <= 999 else { return nil }
        return Int(v)
    }

    /// The numeric code of an alphabetic currency code (`EUR` -> 978).
    public static func currency(code: String) -> Currency? {
        let wanted = code.uppercased()
        return currencyTable.values.first(where: { $0.code == wanted })
    }

    private static let countryTable: [Int: Country] = {
        var t: [Int: Country] = [:]
        for (n, a, name) in countries { t[n] = Country(numeric: n, alpha3: a, name: name) }
        return t
    }()

    private static let currencyTable: [Int: Currency] = {
        var t: [Int: Currency] = [:]
        for (n, c, e, name) in currencies { t[n] = Currency(numeric: n, code: c, exponent: e, name: name) }
        return t
    }()

    private static let countries: [(Int, String, String)] = [
        (8, "ALB", "Albania"), (20, "AND", "Andorra"), (31, "AZE", "Azerbaijan"), (32, "ARG", "Argentina"),
        (36, "AUS", "Australia"), (40, "AUT", "Austria"), (48, "BHR", "Bahrain"), (50, "BGD", "Bangladesh"),
        (51, "ARM", "Armenia"), (56, "BEL", "Belgium"), (70, "BIH", "Bosnia and Herzegovina"),
        (76, "BRA", "Brazil"), (100, "BGR", "Bulgaria"), (112, "BLR", "Belarus"), (124, "CAN", "Canada"),
        (152, "CHL", "Chile"), (156, "CHN", "China"), (158, "TWN", "Taiwan"), (170, "COL", "Colombia"),
        (188, "CRI", "Costa Rica"), (191, "HRV", "Croatia"), (196, "CYP", "Cyprus"), (203, "CZE", "Czechia"),
        (208, "DNK", "Denmark"), (214, "DOM", "Dominican Republic"), (218, "ECU", "Ecuador"),
        (233, "EST", "Estonia"), (246, "FIN", "Finland"), (250, "FRA", "France"), (268, "GEO", "Georgia"),
        (276, "DEU", "Germany"), (292, "GIB", "Gibraltar"), (300, "GRC", "Greece"), (344, "HKG", "Hong Kong"),
        (348, "HUN", "Hungary"), (352, "ISL", "Iceland"), (356, "IND", "India"), (360, "IDN", "Indonesia"),
        (372, "IRL", "Ireland"), (376, "ISR", "Israel"), (380, "ITA", "Italy"), (392, "JPN", "Japan"),
        (398, "KAZ", "Kazakhstan"), (400, "JOR", "Jordan"), (404, "KEN", "Kenya"),
        (410, "KOR", "Korea, Republic of"), (414, "KWT", "Kuwait"), (422, "LBN", "Lebanon"),
        (428, "LVA", "Latvia"), (438, "LIE", "Liechtenstein"), (440, "LTU", "Lithuania"),
        (442, "LUX", "Luxembourg"), (458, "MYS", "Malaysia"), (470, "MLT", "Malta"), (484, "MEX", "Mexico"),
        (492, "MCO", "Monaco"), (498, "MDA", "Moldova"), (499, "MNE", "Montenegro"), (504, "MAR", "Morocco"),
        (512, "OMN", "Oman"), (528, "NLD", "Netherlands"), (554, "NZL", "New Zealand"), (566, "NGA", "Nigeria"),
        (578, "NOR", "Norway"), (586, "PAK", "Pakistan"), (591, "PAN", "Panama"), (604, "PER", "Peru"),
        (608, "PHL", "Philippines"), (616, "POL", "Poland"), (620, "PRT", "Portugal"), (634, "QAT", "Qatar"),
        (642, "ROU", "Romania"), (643, "RUS", "Russian Federation"), (674, "SMR", "San Marino"),
        (682, "SAU", "Saudi Arabia"), (688, "SRB", "Serbia"), (702, "SGP", "Singapore"),
        (703, "SVK", "Slovakia"), (704, "VNM", "Viet Nam"), (705, "SVN", "Slovenia"),
        (710, "ZAF", "South Africa"), (724, "ESP", "Spain"), (752, "SWE", "Sweden"),
        (756, "CHE", "Switzerland"), (764, "THA", "Thailand"), (784, "ARE", "United Arab Emirates"),
        (792, "TUR", "Türkiye"), (804, "UKR", "Ukraine"), (807, "MKD", "North Macedonia"), (818, "EGY", "Egypt"),
        (826, "GBR", "United Kingdom"), (840, "USA", "United States"), (858, "URY", "Uruguay"),
        (862, "VEN", "Venezuela"),
    ]

    private static let currencies: [(Int, String, Int, String)] = [
        (8, "ALL", 2, "Albanian lek"), (32, "ARS", 2, "Argentine peso"), (36, "AUD", 2, "Australian dollar"),
        (48, "BHD", 3, "Bahraini dinar"), (50, "BDT", 2, "Bangladeshi taka"), (51, "AMD", 2, "Armenian dram"),
        (124, "CAD", 2, "Canadian dollar"), (152, "CLP", 0, "Chilean peso"), (156, "CNY", 2, "Chinese yuan"),
        (170, "COP", 2, "Colombian peso"), (188, "CRC", 2, "Costa Rican colón"), (203, "CZK", 2, "Czech koruna"),
        (208, "DKK", 2, "Danish krone"), (214, "DOP", 2, "Dominican peso"), (344, "HKD", 2, "Hong Kong dollar"),
        (348, "HUF", 2, "Hungarian forint"), (352, "ISK", 0, "Icelandic króna"), (356, "INR", 2, "Indian rupee"),
        (360, "IDR", 2, "Indonesian rupiah"), (376, "ILS", 2, "Israeli new shekel"), (392, "JPY", 0, "Japanese yen"),
        (398, "KZT", 2, "Kazakhstani tenge"), (400, "JOD", 3, "Jordanian dinar"), (404, "KES", 2, "Kenyan shilling"),
        (410, "KRW", 0, "South Korean won"), (414, "KWD", 3, "Kuwaiti dinar"), (422, "LBP", 2, "Lebanese pound"),
        (458, "MYR", 2, "Malaysian ringgit"), (484, "MXN", 2, "Mexican peso"), (498, "MDL", 2, "Moldovan leu"),
        (504, "MAD", 2, "Moroccan dirham"), (512, "OMR", 3, "Omani rial"), (554, "NZD", 2, "New Zealand dollar"),
        (566, "NGN", 2, "Nigerian naira"), (578, "NOK", 2, "Norwegian krone"), (586, "PKR", 2, "Pakistani rupee"),
        (604, "PEN", 2, "Peruvian sol"), (608, "PHP", 2, "Philippine peso"), (634, "QAR", 2, "Qatari riyal"),
        (643, "RUB", 2, "Russian ruble"), (682, "SAR", 2, "Saudi riyal"), (702, "SGD", 2, "Singapore dollar"),
        (704, "VND", 0, "Vietnamese đồng"), (710, "ZAR", 2, "South African rand"), (752, "SEK", 2, "Swedish krona"),
        (756, "CHF", 2, "Swiss franc"), (764, "THB", 2, "Thai baht"), (784, "AED", 2, "UAE dirham"),
        (807, "MKD", 2, "Macedonian denar"), (818, "EGP", 2, "Egyptian pound"), (826, "GBP", 2, "Pound sterling"),
        (840, "USD", 2, "US dollar"), (858, "UYU", 2, "Uruguayan peso"), (901, "TWD", 2, "New Taiwan dollar"),
        (933, "BYN", 2, "Belarusian ruble"), (941, "RSD", 2, "Serbian dinar"), (944, "AZN", 2, "Azerbaijani manat"),
        (946, "RON", 2, "Romanian leu"), (949, "TRY", 2, "Turkish lira"), (950, "XAF", 0, "CFA franc BEAC"),
        (952, "XOF", 0, "CFA franc BCEAO"), (953, "XPF", 0, "CFP franc"), (975, "BGN", 2, "Bulgarian lev"),
        (977, "BAM", 2, "Bosnia and Herzegovina convertible mark"), (978, "EUR", 2, "Euro"),
        (980, "UAH", 2, "Ukrainian hryvnia"), (981, "GEL", 2, "Georgian lari"), (985, "PLN", 2, "Polish złoty"),
        (986, "BRL", 2, "Brazilian real"),
    ]
}
