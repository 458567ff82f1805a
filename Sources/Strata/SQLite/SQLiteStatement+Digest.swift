import CSQLite

extension SQLiteStatement {
    /// A 64-bit digest of the current row, over each column's storage class and value
    /// (integers and reals as 64-bit words, text and blobs as their length and bytes, eight at a time),
    /// so equal rows give equal digests whatever connection reads them. Each word is mixed in with an
    /// FNV-style multiply and a shift, which spreads every bit of it over the whole digest.
    func rowDigest(columns: Int32) -> UInt64 {
        let statement = handle
        let prime: UInt64 = 0x0000_0100_0000_01b3
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for column in 0..<columns {
            let type = sqlite3_column_type(statement, column)
            var word: UInt64
            switch type {
            case SQLITE_INTEGER: word = UInt64(bitPattern: sqlite3_column_int64(statement, column))
            case SQLITE_FLOAT: word = sqlite3_column_double(statement, column).bitPattern
            case SQLITE_TEXT, SQLITE_BLOB:
                let pointer =
                    type == SQLITE_TEXT
                    ? UnsafeRawPointer(sqlite3_column_text(statement, column)) : sqlite3_column_blob(statement, column)
                let count = Int(sqlite3_column_bytes(statement, column))
                word = UInt64(count)
                if let pointer, count > 0 {
                    var offset = 0
                    while offset + 8 <= count {
                        let chunk = pointer.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                        hash = (hash ^ chunk) &* prime
                        hash ^= hash >> 29
                        offset += 8
                    }
                    var tail: UInt64 = 0
                    while offset < count {
                        tail = tail << 8 | UInt64(pointer.load(fromByteOffset: offset, as: UInt8.self))
                        offset += 1
                    }
                    word ^= tail << 32
                }
            default: word = 0
            }
            hash = (hash ^ UInt64(UInt32(bitPattern: type))) &* prime
            hash = (hash ^ word) &* prime
            hash ^= hash >> 29
        }
        return hash
    }
}
