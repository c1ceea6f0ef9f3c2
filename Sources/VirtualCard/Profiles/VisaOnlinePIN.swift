// Built-in profile `visa-online-pin`, as data: the same JSON a user profile file holds.

extension CardProfiles {
    static let visaOnlinePIN = builtIn(#"""
{
  "name": "visa-online-pin",
  "summary": "Visa qVSDC asking for online PIN when the reader requires a CVM (CTQ), CVM list: PIN over 50.00 EUR",
  "issuerMasterKey": "0123456789ABCDEFFEDCBA9876543210",
  "atc": 64,
  "applications": [
    {
      "aid": "A0000000031010",
      "label": "VISA CREDIT",
      "preferredName": "Visa Credit",
      "priority": 1,
      "kernelIdentifier": "03",
      "languagePreference": "en",
      "pdol": "9F66049F02069F03069F1A0295055F2A029A039C019F3704",
      "fciIssuerDiscretionaryData": [
        {"tag": "9F5A", "hex": "1109780978"}
      ],
      "aip": "0000",
      "afl": "18010200",
      "gpoFormat": 2,
      "gpoObjects": [
        {"tag": "57", "hex": "4111111111111111D28122011000012345"},
        {"tag": "5F34", "hex": "01"},
        {"tag": "9F6C", "hex": "1600"}
      ],
      "cryptogram": "gpo",
      "pan": "4111111111111111",
      "panSequenceNumber": 1,
      "issuerApplicationData": "06011203A00000",
      "oda": {"method": "fDDA"},
      "records": [
        {
          "sfi": 3,
          "record": 1,
          "objects": [
            {"tag": "5F20", "text": "VISA PIN/CARD"},
            {"tag": "5A", "hex": "4111111111111111"},
            {"tag": "5F24", "hex": "281231"},
            {"tag": "5F25", "hex": "230101"},
            {"tag": "5F28", "hex": "0724"},
            {"tag": "5F30", "hex": "0201"},
            {"tag": "9F07", "hex": "FF00"},
            {"tag": "9F42", "hex": "0978"}
          ]
        },
        {
          "sfi": 3,
          "record": 2,
          "objects": [
            {"tag": "8E", "hex": "000013880000000042071F06"},
            {"tag": "9F0D", "hex": "B450840000"},
            {"tag": "9F0E", "hex": "0000000000"},
            {"tag": "9F0F", "hex": "B470848000"}
          ]
        }
      ],
      "cardTransactionQualifiersWhenCVMRequired": "9600"
    }
  ]
}
"""#)
}
