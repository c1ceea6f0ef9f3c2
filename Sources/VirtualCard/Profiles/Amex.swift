// Built-in profile `amex`, as data: the same JSON a user profile file holds.

extension CardProfiles {
    static let amex = builtIn(#"""
{
  "name": "amex",
  "summary": "American Express Expresspay: PDOL with terminal type, GENERATE AC answered in format 1",
  "issuerMasterKey": "A1B2C3D4E5F60718293A4B5C6D7E8F90",
  "atc": 300,
  "applications": [
    {
      "aid": "A00000002501",
      "label": "AMERICAN EXPRESS",
      "preferredName": "American Express",
      "priority": 1,
      "kernelIdentifier": "04",
      "languagePreference": "en",
      "pdol": "9F3501",
      "aip": "1800",
      "afl": "08010200",
      "gpoFormat": 2,
      "cryptogram": "generateAC",
      "cdol1": "9F02069F03069F1A0295055F2A029A039C019F3704",
      "generateACFormat": 1,
      "pan": "374245455400126",
      "panSequenceNumber": 0,
      "issuerApplicationData": "06020103A0B800",
      "oda": {"method": "CDA"},
      "records": [
        {
          "sfi": 1,
          "record": 1,
          "objects": [
            {"tag": "57", "hex": "374245455400126D28122011000012345F"},
            {"tag": "5F20", "text": "AMEX TEST/CARD"}
          ]
        },
        {
          "sfi": 1,
          "record": 2,
          "objects": [
            {"tag": "5A", "hex": "374245455400126F"},
            {"tag": "5F24", "hex": "281231"},
            {"tag": "5F25", "hex": "230101"},
            {"tag": "5F28", "hex": "0724"},
            {"tag": "5F34", "hex": "00"},
            {"tag": "8C", "hex": "9F02069F03069F1A0295055F2A029A039C019F3704"},
            {"tag": "8D", "hex": "8A029F3704"},
            {"tag": "8E", "hex": "000000000000000042031F03"},
            {"tag": "9F07", "hex": "FF00"},
            {"tag": "9F42", "hex": "0978"}
          ]
        }
      ]
    }
  ]
}
"""#)
}
