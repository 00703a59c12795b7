import NIOCore
import NIOHPACK

/// Experiment 2: NIOHPACK's Huffman decoder, upstream against patched.
enum HuffmanExperiment {
    static func encoded<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: bytes.count)
        buffer.writeHuffmanEncoded(bytes: bytes)
        return buffer
    }

    static func upstream(_ buffer: ByteBuffer) -> String? {
        try? buffer.getHuffmanEncodedString(at: buffer.readerIndex, length: buffer.readableBytes)
    }

    static func patched(_ buffer: ByteBuffer) -> String? {
        buffer.withUnsafeReadableBytes { try? PatchedHuffman.decode($0) }
    }

    static func patchedByteTable(_ buffer: ByteBuffer) -> String? {
        buffer.withUnsafeReadableBytes { try? PatchedHuffmanByteTable.decode($0) }
    }

    /// Decodes, with both decoders, the Huffman coding of the token and of seeded random byte
    /// strings (every byte value, so every code length), and seeded random bytes that are mostly
    /// not valid Huffman coding. Returns the number of disagreements, after printing the first few.
    static func checkAgreement(token: String) -> Int {
        var random = SplitMix64(seed: 0x4855_4646)
        var inputs = [encoded(token.utf8), encoded([UInt8]()), encoded(Array(0...255))]
        for _ in 0..<20_000 {
            let length = Int(random.next() % 64)
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            inputs.append(encoded(bytes))
            var garbage = ByteBufferAllocator().buffer(capacity: length)
            garbage.writeBytes(bytes)
            inputs.append(garbage)
        }
        var disagreements = 0
        var decoded = 0
        for input in inputs {
            let upstream = self.upstream(input)
            decoded += upstream == nil ? 0 : 1
            if upstream != self.patched(input) || upstream != self.patchedByteTable(input) {
                disagreements += 1
                if disagreements <= 10 {
                    print(
                        "DISAGREE huffman \(Array(input.readableBytesView)): upstream \(String(describing: upstream))")
                }
            }
        }
        if self.upstream(encoded(token.utf8)) != token {
            print("upstream does not decode the token it encoded")
            disagreements += 1
        }
        print(
            "agreement: \(inputs.count) Huffman inputs, \(disagreements) disagreements "
                + "(upstream decoded \(decoded), refused \(inputs.count - decoded))"
        )
        return disagreements
    }

    /// The same token in a header block from NIOHPACK's own encoder (never indexed, Huffman coded).
    static func headerBlock(token: String) -> ByteBuffer {
        var headers = HPACKHeaders()
        headers.add(name: "authorization", value: token, indexing: .neverIndexed)
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator(), useHuffmanEncoding: true)
        var block = ByteBufferAllocator().buffer(capacity: 1024)
        try! encoder.encode(headers: headers, to: &block)
        return block
    }

    static func measureAll(token: String) {
        let input = encoded(token.utf8)
        let block = headerBlock(token: token)
        // The copied encoder must produce the bytes NIOHPACK's own encoder put in the block.
        precondition(block.readableBytesView.suffix(input.readableBytes).elementsEqual(input.readableBytesView))
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        print("| case | upstream ns/op (worst) | patched ns/op (worst) | gain |")
        print("|---|---|---|---|")
        let upstreamDecoding = measure(iterations: 50_000) { _ in upstream(opaque(input))?.utf8.count ?? 0 }
        report(
            "Huffman-decode the token (\(input.readableBytes) bytes to \(token.utf8.count)), nibble table, no branches",
            upstream: upstreamDecoding,
            patched: measure(iterations: 50_000) { _ in patched(opaque(input))?.utf8.count ?? 0 }
        )
        report(
            "Huffman-decode the token, byte table (256 KiB)",
            upstream: upstreamDecoding,
            patched: measure(iterations: 50_000) { _ in patchedByteTable(opaque(input))?.utf8.count ?? 0 }
        )
        let whole = measure(iterations: 50_000) { _ in
            var copy = opaque(block)
            return (try? decoder.decodeHeaders(from: &copy))?.count ?? 0
        }
        print(
            "(for scale: NIOHPACK's own `HPACKDecoder.decodeHeaders` of a block holding only that field "
                + "(\(block.readableBytes) bytes): \((whole.best * 10).rounded() / 10) ns, worst \((whole.worst * 10).rounded() / 10))"
        )
    }
}
