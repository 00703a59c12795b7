/// The Huffman decoder as it would be offered upstream: the same nghttp2 4-bit state table and the
/// same result (the same strings decoded, the same inputs refused), with a loop that has no branch
/// per nibble.
///
/// Upstream, each nibble costs a bounds-checked read of a static array of 3-byte tuples (through
/// the lazy global's accessor), a test of the failure flag (throwing at once), and a test of the
/// symbol flag before storing. Here the table is packed once into 32-bit entries (state, flags and
/// symbol) read through one unsafe pointer; each nibble's symbol is stored unconditionally and the
/// output offset advances by the symbol flag; the failure flags are OR-ed together and tested once
/// after the loop. Storing unconditionally is safe: each nibble emits at most one symbol, so the
/// offset never passes the nibbles seen, within the `length * 2` capacity upstream already
/// allocates. Carrying on past a failure only decodes garbage into a string that is then thrown
/// away, so the outcome is the same: an error for every input upstream refuses.
enum PatchedHuffman {
    /// Upstream's `HuffmanDecoderTable`, one `UInt32` per entry: the next state in bits 0-7, the
    /// flags in bits 8-15, the symbol in bits 16-23.
    static let table: [UInt32] = (0..<256 * 16).map { index in
        let entry = HuffmanDecoderTable()[state: UInt8(index / 16), nybble: UInt8(index % 16)]
        return UInt32(entry.state) | UInt32(entry.flags.rawValue) << 8 | UInt32(entry.sym) << 16
    }

    /// Upstream's `HuffmanDecodeError.InvalidState`, which can only be made inside its file.
    struct InvalidState: Error {}

    static let acceptedBit: UInt32 = UInt32(HuffmanDecoderFlags.accepted.rawValue) << 8
    static let symbolShift: UInt32 = 9
    static let failureBit: UInt32 = UInt32(HuffmanDecoderFlags.failure.rawValue) << 8

    /// Decodes Huffman-coded bytes into a `String`, as `ByteBuffer.getHuffmanEncodedString` does.
    static func decode(_ input: UnsafeRawBufferPointer) throws -> String {
        if input.isEmpty {
            return ""
        }
        return try self.table.withUnsafeBufferPointer { table in
            try String(unsafeUninitializedCapacity: input.count * 2) { output in
                var state: UInt32 = 0
                var offset = 0
                var seen: UInt32 = 0
                var last: UInt32 = 0
                for byte in input {
                    let high = table[Int(state << 4 | UInt32(byte >> 4))]
                    output[offset] = UInt8(truncatingIfNeeded: high >> 16)
                    offset &+= Int((high >> symbolShift) & 1)
                    let low = table[Int((high & 0xFF) << 4 | UInt32(byte & 0x0F))]
                    output[offset] = UInt8(truncatingIfNeeded: low >> 16)
                    offset &+= Int((low >> symbolShift) & 1)
                    seen |= high | low
                    state = low & 0xFF
                    last = low
                }
                guard seen & failureBit == 0, last & acceptedBit != 0 else {
                    throw InvalidState()
                }
                return offset
            }
        }
    }
}

/// A second patch, one table read per input byte instead of two: upstream's table composed with
/// itself at start-up into 256 states × 256 bytes (256 KiB), each entry the next state, the
/// flags, the number of symbols the byte completes (at most two: no code is shorter than five
/// bits) and those symbols. It halves the chain of dependent table reads, at the price of a table
/// that no longer fits in the L1 cache.
enum PatchedHuffmanByteTable {
    /// Bits 0-7 the next state, bit 8 accepted, bit 9 failure, bits 10-11 the number of symbols,
    /// bits 16-23 and 24-31 the symbols.
    static let table: [UInt32] = (0..<256 * 256).map { index in
        let nibbles = HuffmanDecoderTable()
        let high = nibbles[state: UInt8(index >> 8), nybble: UInt8(index & 0xFF) >> 4]
        let low = nibbles[state: high.state, nybble: UInt8(index & 0x0F)]
        let symbols = [high, low].filter { $0.flags.contains(.symbol) }.map(\.sym)
        var entry = UInt32(low.state)
        entry |= low.flags.contains(.accepted) ? 1 << 8 : 0
        entry |= high.flags.contains(.failure) || low.flags.contains(.failure) ? 1 << 9 : 0
        entry |= UInt32(symbols.count) << 10
        for (position, symbol) in symbols.enumerated() {
            entry |= UInt32(symbol) << (16 + 8 * position)
        }
        return entry
    }

    static func decode(_ input: UnsafeRawBufferPointer) throws -> String {
        if input.isEmpty {
            return ""
        }
        return try self.table.withUnsafeBufferPointer { table in
            try String(unsafeUninitializedCapacity: input.count * 2) { output in
                var state: UInt32 = 0
                var offset = 0
                var seen: UInt32 = 0
                var last: UInt32 = 0
                for byte in input {
                    let entry = table[Int(state << 8 | UInt32(byte))]
                    output[offset] = UInt8(truncatingIfNeeded: entry >> 16)
                    output[offset &+ 1] = UInt8(truncatingIfNeeded: entry >> 24)
                    offset &+= Int((entry >> 10) & 3)
                    seen |= entry
                    state = entry & 0xFF
                    last = entry
                }
                guard seen & (1 << 9) == 0, last & (1 << 8) != 0 else {
                    throw PatchedHuffman.InvalidState()
                }
                return offset
            }
        }
    }
}
