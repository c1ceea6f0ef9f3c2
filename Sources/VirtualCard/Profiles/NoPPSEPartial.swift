// Built-in profile `no-ppse-partial`, as data: the same JSON a user profile file holds.

extension CardProfiles {
    static let noPPSEPartial = builtIn(#"""
{
  "name": "no-ppse-partial",
  "summary": "No PPSE, two Visa applications under one AID prefix: only partial-AID selection with next occurrence finds the second (priority 1)",
  "ppse": false,
  "issuerMasterKey": "0123456789ABCDEFFEDCBA9876543210",
  "atc": 30,
  "applications": [
    {
      "aid": "A000000003101001",
      "label": "VISA DEBIT",
      "preferredName": "Visa Debit",
      "priority": 2,
      "kernelIdentifier": "03",
      "languagePreference": "en",
      "pdol": "9F66049F02069F03069F1A0295055F2A029A039C019F3704",
      "aip": "0000",
      "afl": "18010100",
      "gpoFormat": 2,
      "gpoObjects": [
        {
          "tag": "57",
          "hex": "4000056655665556D28122011000012345"
        },
        {
          "tag": "5F34",
          "hex": "01"
        },
        {
          "tag": "9F6C",
          "hex": "0000"
        }
      ],
      "cryptogram": "gpo",
      "pan": "4000056655665556",
      "panSequenceNumber": 1,
      "issuerApplicationData": "06011203A00000",
      "oda": {"method": "fDDA"},
      "records": [
        {
          "sfi": 3,
          "record": 1,
          "objects": [
            {
              "tag": "5F20",
              "text": "VISA DEBIT/CARD"
            },
            {
              "tag": "5A",
              "hex": "4000056655665556"
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
              "hex": "0724"
            },
            {
              "tag": "5F30",
              "hex": "0201"
            },
            {
              "tag": "9F07",
              "hex": "FF00"
            },
            {
              "tag": "9F42",
              "hex": "0978"
            }
          ]
        }
      ],
      "cardTransactionQualifiersWhenCVMRequired": "1600"
    },
    {
      "aid": "A000000003101002",
      "label": "VISA CREDIT",
      "preferredName": "Visa Credit",
      "priority": 1,
      "kernelIdentifier": "03",
      "languagePreference": "en",
      "pdol": "9F66049F02069F03069F1A0295055F2A029A039C019F3704",
      "aip": "0000",
      "afl": "18010100",
      "gpoFormat": 2,
      "gpoObjects": [
        {
          "tag": "57",
          "hex": "4242424242424242D28122011000012345"
        },
        {
          "tag": "5F34",
          "hex": "01"
        },
        {
          "tag": "9F6C",
          "hex": "0000"
        }
      ],
      "cryptogram": "gpo",
      "pan": "4242424242424242",
      "panSequenceNumber": 1,
      "issuerApplicationData": "06011203A00000",
      "oda": {"method": "fDDA"},
      "records": [
        {
          "sfi": 3,
          "record": 1,
          "objects": [
            {
              "tag": "5F20",
              "text": "VISA CREDIT/CARD"
            },
            {
              "tag": "5A",
              "hex": "4242424242424242"
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
              "hex": "0724"
            },
            {
              "tag": "5F30",
              "hex": "0201"
            },
            {
              "tag": "9F07",
              "hex": "FF00"
            },
            {
              "tag": "9F42",
              "hex": "0978"
            }
          ]
        }
      ],
      "cardTransactionQualifiersWhenCVMRequired": "1600"
    }
  ]
}
"""#)
}
