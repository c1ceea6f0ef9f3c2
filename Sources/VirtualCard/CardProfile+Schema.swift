extension CardProfile {
    /// The JSON Schema (draft 2020-12) of profile files: every field ``load(contentsOf:)``
    /// reads, with its type, its bounds and what it means. `tapemu cards schema` prints it;
    /// `tapemu cards show NAME --json` prints a built-in profile in this shape, to start from.
    ///
    /// The schema says what a field looks like; ``validate()`` also checks what a schema cannot
    /// (a PDOL that parses, an AFL naming existing records, a Luhn-valid PAN that 5A and 57
    /// repeat) and names the field by its JSON path. Tests keep the field lists here and in the
    /// decoder the same.
    public static let jsonSchema: String = #"""
    {
      "$schema": "https://json-schema.org/draft/2020-12/schema",
      "$id": "https://tapemu.invalid/schemas/card-profile.json",
      "title": "tapemu virtual card profile",
      "description": "An emulated EMV contactless card: its applications, their files and keys, and how it behaves. Load one with --card FILE.json. Bytes are hex strings (spaces or colons between bytes allowed); unknown fields are errors.",
      "type": "object",
      "additionalProperties": false,
      "required": ["name", "issuerMasterKey", "applications"],
      "properties": {
        "name": {"type": "string", "pattern": "^\\S+$", "description": "A short name without spaces, e.g. my-visa."},
        "summary": {"type": "string", "default": "", "description": "One line for `tapemu cards`."},
        "atrHistoricalBytes": {"$ref": "#/$defs/hex", "description": "The ATS historical bytes the reader puts in the ATR it makes up: 0 to 15 bytes."},
        "ppse": {"type": "boolean", "default": true, "description": "Whether the card has a PPSE (2PAY.SYS.DDF01); without one SELECT PPSE answers 6A82."},
        "issuerMasterKey": {"$ref": "#/$defs/hex", "description": "The issuer master key (16 bytes, double-length 3DES) the card's keys derive from. Test keys only."},
        "atc": {"type": "integer", "minimum": 0, "maximum": 65535, "default": 0, "description": "The application transaction counter before the first transaction."},
        "applications": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/application"}, "description": "The applications, in the order the PPSE lists them."},
        "behaviour": {"$ref": "#/$defs/behaviour"}
      },
      "$defs": {
        "hex": {"type": "string", "pattern": "^[ \\t\\r\\n:]*([0-9A-Fa-f]{2}[ \\t\\r\\n:]*)*$", "description": "Bytes in hex."},
        "tag": {"type": "string", "pattern": "^([0-9A-Fa-f]{2}){1,4}$", "description": "A BER-TLV tag of 1 to 4 bytes, e.g. 5F20."},
        "dataObject": {
          "type": "object",
          "description": "A data object: primitive (hex or text) or constructed (objects).",
          "additionalProperties": false,
          "required": ["tag"],
          "oneOf": [{"required": ["hex"]}, {"required": ["text"]}, {"required": ["objects"]}],
          "properties": {
            "tag": {"$ref": "#/$defs/tag"},
            "hex": {"$ref": "#/$defs/hex", "description": "The value bytes (for a constructed tag: its encoded children)."},
            "text": {"type": "string", "pattern": "^[\\u0000-\\u007F]*$", "description": "The value as ASCII text."},
            "objects": {"type": "array", "items": {"$ref": "#/$defs/dataObject"}, "description": "The children of a constructed tag."}
          }
        },
        "record": {
          "type": "object",
          "description": "One record of a short file, answered as 70 { objects } (or hex verbatim).",
          "additionalProperties": false,
          "required": ["sfi", "record"],
          "not": {"required": ["objects", "hex"]},
          "properties": {
            "sfi": {"type": "integer", "minimum": 1, "maximum": 30, "description": "Short file identifier."},
            "record": {"type": "integer", "minimum": 1, "maximum": 255, "description": "Record number."},
            "objects": {"type": "array", "items": {"$ref": "#/$defs/dataObject"}, "description": "The objects of the record template 70."},
            "hex": {"$ref": "#/$defs/hex", "description": "The record's bytes verbatim instead (without SW1 SW2), for cards that break the rules."}
          }
        },
        "application": {
          "type": "object",
          "description": "One EMV application.",
          "additionalProperties": false,
          "required": ["aid", "label", "aip", "cryptogram", "pan"],
          "properties": {
            "aid": {"$ref": "#/$defs/hex", "description": "The AID, 5 to 16 bytes."},
            "label": {"type": "string", "pattern": "^[ -~]{1,16}$", "description": "Application label (tag 50): 1 to 16 printable ASCII characters."},
            "preferredName": {"type": "string", "minLength": 1, "maxLength": 16, "description": "Application preferred name (9F12)."},
            "priority": {"type": "integer", "minimum": 0, "maximum": 255, "description": "Application priority indicator (87): low nibble 1 is highest; bit 8 asks the cardholder."},
            "kernelIdentifier": {"$ref": "#/$defs/hex", "description": "Kernel identifier (9F2A) in the PPSE entry, 1 to 8 bytes, e.g. 03 for Visa."},
            "extendedSelection": {"$ref": "#/$defs/hex", "description": "Extended selection (9F29): the terminal selects the AID followed by these bytes (with the AID at most 16)."},
            "languagePreference": {"type": "string", "pattern": "^([ -~]{2}){1,4}$", "description": "Language preference (5F2D): 1 to 4 two-letter codes, e.g. enfr."},
            "pdol": {"$ref": "#/$defs/hex", "default": "", "description": "PDOL (9F38) as a DOL; empty: GPO takes 83 00."},
            "fciIssuerDiscretionaryData": {"type": "array", "items": {"$ref": "#/$defs/dataObject"}, "description": "Objects in the FCI issuer discretionary data (BF0C)."},
            "aip": {"$ref": "#/$defs/hex", "description": "Application interchange profile (82): 2 bytes."},
            "afl": {"$ref": "#/$defs/hex", "default": "", "description": "Application file locator (94): 4 bytes per entry (SFI << 3, first, last, records for offline authentication), naming records the application has."},
            "gpoFormat": {"enum": [1, 2], "default": 2, "description": "The GPO answer's format: 1 (80: AIP AFL) or 2 (77: TLV)."},
            "gpoObjects": {"type": "array", "items": {"$ref": "#/$defs/dataObject"}, "description": "More objects in a format 2 GPO answer (e.g. 57, 5F34, 9F6C)."},
            "cryptogram": {"enum": ["gpo", "generateAC"], "description": "Where the card gives its cryptogram: in the GPO answer (Visa qVSDC; needs format 2) or in the GENERATE AC answer (needs a CDOL1)."},
            "cdol1": {"$ref": "#/$defs/hex", "default": "", "description": "CDOL1 (8C) as a DOL; empty: no GENERATE AC."},
            "generateACFormat": {"enum": [1, 2], "default": 2, "description": "The GENERATE AC answer's format."},
            "pan": {"type": "string", "pattern": "^[0-9]{12,19}$", "description": "The PAN the keys derive from: 12 to 19 digits, Luhn-valid; 5A and 57 must hold the same."},
            "panSequenceNumber": {"type": "integer", "minimum": 0, "maximum": 99, "default": 0, "description": "The PAN sequence number (5F34)."},
            "issuerApplicationData": {"$ref": "#/$defs/hex", "default": "", "description": "Issuer application data (9F10) returned with the cryptogram: at most 32 bytes."},
            "cardTransactionQualifiersWhenCVMRequired": {"$ref": "#/$defs/hex", "description": "The card transaction qualifiers (9F6C, 2 bytes) answered instead when the reader's TTQ says CVM required."},
            "records": {"type": "array", "items": {"$ref": "#/$defs/record"}, "description": "The records READ RECORD answers."},
            "getDataObjects": {"type": "array", "items": {"$ref": "#/$defs/dataObject"}, "description": "Objects GET DATA answers, besides the ATC."},
            "oda": {"$ref": "#/$defs/oda"}
          }
        },
        "oda": {
          "type": "object",
          "description": "Offline data authentication. The card is personalised when made: tapemu's test CA (index E7, test only) certifies the test issuer key, the issuer certifies the card's key over the static data (every record the AFL names, and the AIP through 9F4A = 82), and a certificate record (8F, 90, 92, 9F32, 9F46, 9F47, 9F48, 9F4A, or 93 for SDA) is added at the first free SFI of 1 to 10. The keys are tapemu's built-in test keys: a profile never holds a private key.",
          "additionalProperties": false,
          "required": ["method"],
          "properties": {
            "method": {"enum": ["SDA", "fDDA", "DDA", "CDA"], "description": "SDA: signed static data 93. fDDA (Visa qVSDC): the card signs its GPO answer (9F4B over the unpredictable number, amount, currency and 9F69). DDA: the card signs the DDOL data of INTERNAL AUTHENTICATE with its ICC dynamic number. CDA: the card signs its GENERATE AC answer when the reader asks (P1 bit 5)."},
            "ddol": {"$ref": "#/$defs/hex", "default": "9F3704", "description": "DDA: the card's DDOL 9F49, in its certificate record; empty: none (the reader uses its default DDOL)."},
            "issuerCertificateSerial": {"$ref": "#/$defs/hex", "default": "000001", "description": "The issuer certificate's serial number, 3 bytes (what a revocation list names)."},
            "fault": {"enum": ["expiredIssuerCertificate", "wrongHash", "revokedCertificate", "missingRecord", "tamperedSignature", "cdaMismatch"], "description": "A broken card: an issuer certificate expired 12/24, a certificate hash that does not match, an issuer certificate with serial 0BAD01 (for a revocation list), a certificate record the AFL does not name, a signature changed after signing, a CDA transaction data hash without the CDOL1 data."}
          }
        },
        "scriptedResponse": {
          "type": "object",
          "additionalProperties": false,
          "required": ["command", "response"],
          "properties": {
            "command": {"$ref": "#/$defs/hex", "description": "A command prefix (at least one byte)."},
            "response": {"$ref": "#/$defs/hex", "description": "The answer to give verbatim: data + SW1 SW2 (at least 2 bytes)."}
          }
        },
        "behaviour": {
          "type": "object",
          "description": "How the card behaves beyond answering correctly.",
          "additionalProperties": false,
          "properties": {
            "answersThroughGetResponse": {"type": "boolean", "default": false, "description": "Answer data through 61xx and GET RESPONSE, as a T=0 card."},
            "demandsExactLe": {"type": "boolean", "default": false, "description": "Answer 6Cxx when Le is not the exact length."},
            "declinesOffline": {"type": "boolean", "default": false, "description": "Every cryptogram is an AAC."},
            "cardTimeMs": {"type": "number", "minimum": 0, "maximum": 3600000, "default": 0, "description": "Milliseconds the card spends on each command."},
            "cardTimeMsByInstruction": {"type": "object", "propertyNames": {"pattern": "^[0-9A-Fa-f]{2}$"}, "additionalProperties": {"type": "number", "minimum": 0, "maximum": 3600000}, "description": "Milliseconds per instruction byte (e.g. {\"A8\": 250}), instead of cardTimeMs."},
            "tearAfterExchange": {"type": "integer", "minimum": 0, "description": "Leave the field after answering this many exchanges."},
            "muteAtExchange": {"type": "integer", "minimum": 1, "description": "Never answer this exchange (from 1), and stay mute."},
            "scriptedResponses": {"type": "array", "items": {"$ref": "#/$defs/scriptedResponse"}, "description": "Commands answered verbatim; the first matching prefix wins."}
          }
        }
      }
    }
    """#
}
