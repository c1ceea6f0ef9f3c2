// Built-in profile `girocard`, as data: the same JSON a user profile file holds.

extension CardProfiles {
    static let girocard = builtIn(#"""
{
  "name": "girocard",
  "summary": "girocard (domestic kernel, no 9F2A): the CVM list no CVM if supported, then online PIN; 9F6C FFFF is no CTQ here",
  "issuerMasterKey": "3C4FCF098815F7ABA6D2AE2816157E2B",
  "atc": 5,
  "applications": [
    {
      "aid": "A0000003591010028001",
      "label": "girocard",
      "preferredName": "girocard",
      "priority": 1,
      "languagePreference": "en",
      "aip": "1880",
      "afl": "0801010010010200",
      "gpoFormat": 1,
      "cryptogram": "generateAC",
      "cdol1": "9F02069F03069F1A0295055F2A029A039C019F37049F35019F45029F4C089F3403",
      "generateACFormat": 2,
      "pan": "6799990100000000019",
      "panSequenceNumber": 1,
      "issuerApplicationData": "0110A00003220000000000000000000000FF",
      "oda": {"method": "CDA"},
      "records": [
        {
          "sfi": 1,
          "record": 1,
          "objects": [
            {
              "tag": "57",
              "hex": "6799990100000000019D28122011000012345F"
            },
            {
              "tag": "5F20",
              "text": "GIROCARD TEST/CARD"
            }
          ]
        },
        {
          "sfi": 2,
          "record": 1,
          "objects": [
            {
              "tag": "5A",
              "hex": "6799990100000000019F"
            },
            {
              "tag": "5F24",
              "hex": "281231"
            },
            {
              "tag": "5F25",
              "hex": "230101"
            },
            {
              "tag": "5F28",
              "hex": "0276"
            },
            {
              "tag": "5F34",
              "hex": "01"
            },
            {
              "tag": "9F07",
              "hex": "FF00"
            },
            {
              "tag": "8C",
              "hex": "9F02069F03069F1A0295055F2A029A039C019F37049F35019F45029F4C089F3403"
            },
            {
              "tag": "8D",
              "hex": "910A8A0295059F37049F4C08"
            },
            {
              "tag": "9F42",
              "hex": "0978"
            }
          ]
        },
        {
          "sfi": 2,
          "record": 2,
          "hex": "701C8E0C00000000000000001F0302039F080200029F6C02FFFF9F4A0182"
        }
      ],
      "getDataObjects": [
        {
          "tag": "9F17",
          "hex": "03"
        }
      ]
    }
  ]
}
"""#)
}
