// Built-in profile `two-apps`, as data: the same JSON a user profile file holds.

extension CardProfiles {
    static let twoApps = builtIn(#"""
{
  "name": "two-apps",
  "summary": "Two Visa applications in the PPSE: debit (priority 2) listed before credit (priority 1)",
  "issuerMasterKey": "0123456789ABCDEFFEDCBA9876543210",
  "atc": 12,
  "applications": [
    {
      "aid": "A0000000032010",
      "label": "VISA DEBIT",
      "preferredName": "Visa Debit",
      "priority": 2,
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
        {"tag": "57", "hex": "4761739001010119D28122011000012345"},
        {"tag": "5F34", "hex": "01"},
        {"tag": "9F6C", "hex": "1600"}
      ],
      "cryptogram": "gpo",
      "pan": "4761739001010119",
      "panSequenceNumber": 1,
      "issuerApplicationData": "06011203A00000",
      "oda": {"method": "fDDA"},
      "records": [
        {
          "sfi": 3,
          "record": 1,
          "objects": [
            {"tag": "5F20", "text": "VISA TEST/CARD"},
            {"tag": "5A", "hex": "4761739001010119"},
            {"tag": "5F24", "hex": "281231"},
            {"tag": "5F25", "hex": "230101"},
            {"tag": "5F28", "hex": "0724"},
            {"tag": "5F30", "hex": "0201"},
            {"tag": "9F07", "hex": "FF00"},
            {"tag": "9F42", "hex": "0978"}
          ]
        }
      ]
    },
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
        {"tag": "57", "hex": "4761739001010135D28122011000012345"},
        {"tag": "5F34", "hex": "01"},
        {"tag": "9F6C", "hex": "1600"}
      ],
      "cryptogram": "gpo",
      "pan": "4761739001010135",
      "panSequenceNumber": 1,
      "issuerApplicationData": "06011203A00000",
      "oda": {"method": "fDDA"},
      "records": [
        {
          "sfi": 3,
          "record": 1,
          "objects": [
            {"tag": "5F20", "text": "VISA TEST/CARD"},
            {"tag": "5A", "hex": "4761739001010135"},
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
