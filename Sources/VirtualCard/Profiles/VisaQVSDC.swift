// Built-in profile `visa-qvsdc`, as data: the same JSON a user profile file holds.

extension CardProfiles {
    static let visaQVSDC = builtIn(#"""
{
  "name": "visa-qvsdc",
  "summary": "Visa credit, qVSDC: cryptogram in the GPO answer (format 2), PDOL with TTQ and transaction data",
  "issuerMasterKey": "0123456789ABCDEFFEDCBA9876543210",
  "atc": 41,
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
      "afl": "18010100",
      "gpoFormat": 2,
      "gpoObjects": [
        {"tag": "57", "hex": "4761739001010010D28122011000012345"},
        {"tag": "5F34", "hex": "01"},
        {"tag": "9F6C", "hex": "1600"}
      ],
      "cryptogram": "gpo",
      "pan": "4761739001010010",
      "panSequenceNumber": 1,
      "issuerApplicationData": "06011203A00000",
      "oda": {"method": "fDDA"},
      "records": [
        {
          "sfi": 3,
          "record": 1,
          "objects": [
            {"tag": "5F20", "text": "VISA TEST/CARD"},
            {"tag": "5A", "hex": "4761739001010010"},
            {"tag": "5F24", "hex": "281231"},
            {"tag": "5F25", "hex": "230101"},
            {"tag": "5F28", "hex": "0724"},
            {"tag": "5F30", "hex": "0201"},
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
