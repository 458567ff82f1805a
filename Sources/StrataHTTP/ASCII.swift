extension UInt8 {
    /// Whether the byte is an ASCII capital letter.
    var isASCIIUppercase: Bool { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) }
    /// The byte with an ASCII capital letter lowercased; any other byte as it is.
    var asciiLowercased: UInt8 { isASCIIUppercase ? self | 0x20 : self }
}
