// Built-in profile `visa-cdcvm`, as data: the same JSON a user profile file holds.

extension CardProfiles {
    static let visaCDCVM = builtIn(#"""
{
  "name": "visa-cdcvm",
  "summary": "Visa qVSDC on a phone: the CTQ says the consumer device CVM was performed (no PIN above the limit)",
  "issuerMasterKey": "0123456789ABCDEFFEDCBA9876543210",
  "atc": 230,
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
        {"tag": "57", "hex": "4761739001010150D28122011000012345"},
        {"tag": "5F34", "hex": "01"},
        {"tag": "9F6C", "hex": "0080"}
      ],
      "cryptogram": "gpo",
      "pan": "4761739001010150",
      "panSequenceNumber": 1,
      "issuerApplicationData": "06011203A00000",
      "oda": {"method": "fDDA"},
      "records": [
        {
          "sfi": 3,
          "record": 1,
          "objects": [
            {"tag": "5F20", "text": "VISA MOBILE/CARD"},
            {"tag": "5A", "hex": "4761739001010150"},
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
