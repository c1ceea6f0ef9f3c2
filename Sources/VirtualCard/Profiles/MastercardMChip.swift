// Built-in profile `mastercard-mchip`, as data: the same JSON a user profile file holds.

extension CardProfiles {
    static let mastercardMChip = builtIn(#"""
{
  "name": "mastercard-mchip",
  "summary": "Mastercard M/Chip: empty PDOL, format-1 GPO, 3 records over SFI 1 and 2, CDOL1 and GENERATE AC",
  "issuerMasterKey": "4F6B3E2A1D5C7B8A9F0E1D2C3B4A5968",
  "atc": 7,
  "applications": [
    {
      "aid": "A0000000041010",
      "label": "MASTERCARD",
      "preferredName": "Mastercard",
      "priority": 1,
      "kernelIdentifier": "02",
      "languagePreference": "en",
      "aip": "1880",
      "afl": "0801010010010200",
      "gpoFormat": 1,
      "cryptogram": "generateAC",
      "cdol1": "9F02069F03069F1A0295055F2A029A039C019F37049F35019F45029F4C089F3403",
      "generateACFormat": 2,
      "pan": "5413330089010434",
      "panSequenceNumber": 1,
      "issuerApplicationData": "0110A00003220000000000000000000000FF",
      "oda": {"method": "CDA"},
      "records": [
        {
          "sfi": 1,
          "record": 1,
          "objects": [
            {"tag": "57", "hex": "5413330089010434D28122011000012345"},
            {"tag": "5F20", "text": "MASTERCARD TEST/CARD"}
          ]
        },
        {
          "sfi": 2,
          "record": 1,
          "objects": [
            {"tag": "5A", "hex": "5413330089010434"},
            {"tag": "5F24", "hex": "281231"},
            {"tag": "5F25", "hex": "230101"},
            {"tag": "5F28", "hex": "0724"},
            {"tag": "5F34", "hex": "01"},
            {"tag": "9F07", "hex": "FF00"},
            {"tag": "9F08", "hex": "0002"},
            {"tag": "8C", "hex": "9F02069F03069F1A0295055F2A029A039C019F37049F35019F45029F4C089F3403"},
            {"tag": "8D", "hex": "910A8A0295059F37049F4C08"}
          ]
        },
        {
          "sfi": 2,
          "record": 2,
          "objects": [
            {"tag": "8E", "hex": "000000000000000042031E031F03"},
            {"tag": "9F42", "hex": "0978"},
            {"tag": "9F0D", "hex": "B450840000"},
            {"tag": "9F0E", "hex": "0000000000"},
            {"tag": "9F0F", "hex": "B470848000"}
          ]
        }
      ],
      "getDataObjects": [
        {"tag": "9F17", "hex": "03"}
      ]
    }
  ]
}
"""#)
}
