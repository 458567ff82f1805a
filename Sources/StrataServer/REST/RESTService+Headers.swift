import Strata

extension RESTService {
    /// The media type of a `Content-Type` value, lowercased, without parameters.
    static func mediaType(_ header: String) -> String {
        var type = header.utf8.prefix { $0 != UInt8(ascii: ";") }[...]
        while let first = type.first, first == 0x20 || first == 0x09 { type = type.dropFirst() }
        while let last = type.last, last == 0x20 || last == 0x09 { type = type.dropLast() }
        return String(decoding: type, as: UTF8.self).lowercased()
    }

    /// Entity tags of an `If-Match` / `If-None-Match` header: nil for `*`. A bare version (`3`, as
    /// a hand-written request may send it) is read as its tag (`"3"`).
    static func entityTags(_ header: String) throws(Problem) -> Set<Int64>? {
        let blanks: Set<UInt8> = [0x20, 0x09]
        func trimmed(_ text: Substring.UTF8View) -> Substring.UTF8View {
            var text = text
            while let first = text.first, blanks.contains(first) { text = text.dropFirst() }
            while let last = text.last, blanks.contains(last) { text = text.dropLast() }
            return text
        }
        let whole = trimmed(header[...].utf8)
        if whole.elementsEqual("*".utf8) { return nil }
        var versions: Set<Int64> = []
        for part in whole.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: true) {
            var tag = trimmed(part)
            let weak = tag.starts(with: "W/".utf8)
            if weak { tag = tag.dropFirst(2) }
            let quoted = tag.count >= 2 && tag.first == UInt8(ascii: "\"") && tag.last == UInt8(ascii: "\"")
            if quoted { tag = tag.dropFirst().dropLast() }
            var digits = tag
            if let sign = digits.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                digits = digits.dropFirst()
            }
            guard quoted || !weak, (1...18).contains(digits.count), digits.allSatisfy({ (0x30...0x39).contains($0) }),
                let version = Int64(String(decoding: tag, as: UTF8.self))
            else {
                throw Problem.badRequest("'\(header)' is not a list of entity tags such as \"3\"")
            }
            versions.insert(version)
        }
        if versions.isEmpty { throw Problem.badRequest("the entity-tag header is empty") }
        return versions
    }
}
