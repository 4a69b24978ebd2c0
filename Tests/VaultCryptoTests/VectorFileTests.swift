import DotSafeTestSupport
import Testing

@Suite struct VectorFileTests {
    @Test func parsesSectionsRecordsFailMarksAndEmptyValues() {
        let text = """
        # comment
        [Keylen = 256]
        [IVlen = 96]

        Count = 0
        Key = 00ff
        PT =

        Count = 1
        Key = 01
        FAIL

        [Keylen = 128]
        COUNT = 7
        IKM  = ab

        OKM  = cd
        """
        let records = VectorFile.parse(text)
        #expect(records.count == 3)
        #expect(records[0].section == ["Keylen": "256", "IVlen": "96"])
        #expect(records[0].fields == ["Count": "0", "Key": "00ff", "PT": ""])
        #expect(!records[0].isFail)
        #expect(records[1].isFail)
        #expect(records[2].section == ["Keylen": "128"])
        #expect(records[2].fields == ["COUNT": "7", "IKM": "ab", "OKM": "cd"])
    }

    @Test func listFieldsSplitIntoItemsAndParts() throws {
        let record = try #require(VectorFile.parse("COUNT = 0\nPAGES = 7:ab 16:\nGROUPS = 0+2 5+1\nNONE =\n").first)
        #expect(try record.list("PAGES") == [["7", "ab"], ["16", ""]])
        #expect(try record.list("GROUPS", separator: "+") == [["0", "2"], ["5", "1"]])
        #expect(try record.list("NONE").isEmpty)
    }

    @Test func hexDecodesAndRejects() throws {
        #expect(try hexBytes("00ff10Ab") == [0x00, 0xff, 0x10, 0xab])
        #expect(try hexBytes("") == [])
        #expect(throws: HexError.self) { try hexBytes("0") }
        #expect(throws: HexError.self) { try hexBytes("zz") }
    }
}
