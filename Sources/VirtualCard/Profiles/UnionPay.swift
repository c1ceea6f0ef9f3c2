// Built-in profile `unionpay`, as data: the same JSON a user profile file holds.

extension CardProfiles {
    static let unionPay = builtIn(#"""
{
  "name": "unionpay",
  "summary": "UnionPay debit (C-7, qUICS): cryptogram in the GPO answer; the CTQ (9F6C) asks for online PIN when the reader requires a CVM",
  "issuerMasterKey": "A6D2AE2816157E2B3C4FCF098815F7AB",
  "atc": 9,
  "applications": [
    {
      "aid": "A000000333010101",
      "label": "UnionPay Debit",
      "preferredName": "UnionPay Debit",
      "priority": 1,
      "kernelIdentifier": "07",
      "languagePreference": "en",
      "pdol": "9F66049F02069F03069F1A0295055F2A029A039C019F3704",
      "aip": "0000",
      "afl": "18010100",
      "gpoFormat": 2,
      "gpoObjects": [
        {
          "tag": "57",
          "hex": "6200000000000005D28122011000012345"
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
      "pan": "6200000000000005",
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
              "text": "UNIONPAY TEST/CARD"
            },
            {
              "tag": "5A",
              "hex": "6200000000000005"
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
      "cardTransactionQualifiersWhenCVMRequired": "8000"
    }
  ]
}
"""#)
}
