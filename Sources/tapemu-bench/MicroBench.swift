import BERTLV
import ISO7816

/// Byte-level benchmarks: BER-TLV parsing of real records and APDU encoding/decoding.
enum MicroBench {
    struct Row {
        var name: String
        var perCall: PerCall
        /// Bytes handled per call, for a throughput figure.
        var bytesPerCall: Int?
        var note: String
    }

    /// Parses every READ RECORD answer of the corpus (falls back to the FCIs and GPO answers too).
    static func tlv(records: [[UInt8]], quick: Bool) -> Row? {
        guard !records.isEmpty else { return nil }
        let bytes = records.reduce(0) { $0 + $1.count }
        let perCall = Harness.batches(warmup: 200, runs: quick ? 5 : 15, iterations: quick ? 500 : 2_000) { () -> Int in
            var n = 0
            for r in records {
                // A record that does not parse still counts its work; the corpus holds real ones.
                if let tlvs = try? BERTLV.parse(r) { n &+= tlvs.count &+ tlvs.flattened.count }
            }
            return n
        }
        let scaled = PerCall(samples: perCall.samples.map { $0 / records.count }, iterations: perCall.iterations)
        return Row(name: "TLV parse, real records", perCall: scaled, bytesPerCall: bytes / records.count,
                   note: "\(records.count) records, \(bytes / records.count) bytes each on average")
    }

    static func apdu(quick: Bool) -> [Row] {
        let runs = quick ? 5 : 15, iterations = quick ? 20_000 : 100_000
        let pdolData: [UInt8] = [0x83, 0x21] + Array(repeating: 0x5A, count: 0x21)
        let gpo = CommandAPDU.getProcessingOptions(pdolData: Array(pdolData.dropFirst(2)))
        let gpoBytes = gpo.bytes
        let record: [UInt8] = [0x70, 0x3B] + Array(repeating: 0x41, count: 0x3B) + [0x90, 0x00]
        var rows: [Row] = []
        rows.append(Row(name: "APDU encode (GPO, 33-byte PDOL data)",
                        perCall: Harness.batches(warmup: 1_000, runs: runs, iterations: iterations) { () -> Int in
                            CommandAPDU.getProcessingOptions(pdolData: Array(pdolData.dropFirst(2))).bytes.count
                        }, bytesPerCall: gpoBytes.count, note: "CommandAPDU → bytes"))
        rows.append(Row(name: "APDU decode (GPO command)",
                        perCall: Harness.batches(warmup: 1_000, runs: runs, iterations: iterations) { () -> Int in
                            (try? CommandAPDU(bytes: gpoBytes))?.data.count ?? 0
                        }, bytesPerCall: gpoBytes.count, note: "bytes → CommandAPDU, checked"))
        rows.append(Row(name: "APDU decode (record response)",
                        perCall: Harness.batches(warmup: 1_000, runs: runs, iterations: iterations) { () -> Int in
                            (try? ResponseAPDU(bytes: record))?.data.count ?? 0
                        }, bytesPerCall: record.count, note: "bytes → ResponseAPDU"))
        return rows
    }
}
