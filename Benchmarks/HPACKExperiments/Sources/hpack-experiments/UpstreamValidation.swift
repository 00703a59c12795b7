//===----------------------------------------------------------------------===//
//
// This source file is part of the SwiftNIO open source project
//
// Copyright (c) 2017-2026 Apple Inc. and the SwiftNIO project authors
// Licensed under Apache License v2.0
//
// See LICENSE.txt for license information
// See CONTRIBUTORS.txt for the list of SwiftNIO project authors
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Copied from swift-nio-http2 1.46.0 (commit 1a3ee02f038410190095431e7fc7cec4f7f37fd2):
// `HPACKHeaders.isValidPseudoHeaderValue` and `HPACKHeaders.isValidFieldValue` from
// Sources/NIOHTTP2/HTTP2ToHTTP1Codec.swift, and `Substring.UTF8View.isValidFieldName` with the
// colon stripping of `HeaderFieldName.init` from Sources/NIOHTTP2/HPACKHeaders+Validation.swift.
// Only the names changed (they are internal or fileprivate upstream) and the long comments were
// shortened; the code that runs is the same.

/// The validation NIOHTTP2 1.46.0 runs on every field of every received header block.
enum UpstreamValidation {
    /// Pseudo-header values must not contain a CTL, SP or DEL.
    static func isValidPseudoHeaderValue(_ value: String) -> Bool {
        !value.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F })
    }

    /// Regular field values must not contain NUL, LF or CR (RFC 9113 § 8.2.1).
    static func isValidFieldValue(_ value: String) -> Bool {
        !value.utf8.contains(where: { $0 == 0x00 || $0 == 0x0A || $0 == 0x0D })
    }

    /// Whether a field name, after its leading colon for a pseudo-header, is a lowercase token.
    static func isValidFieldName(_ fieldName: String) -> Bool {
        let fieldSubstring = Substring(fieldName)
        let fieldBytes = fieldSubstring.utf8
        let baseNameBytes: Substring.UTF8View
        if fieldBytes.first == UInt8(ascii: ":") {
            baseNameBytes = fieldBytes.dropFirst()
        } else {
            baseNameBytes = fieldBytes
        }
        return baseNameBytes.upstreamIsValidFieldName
    }
}

extension Substring.UTF8View {
    /// Whether this is a valid HTTP/2 header field name.
    ///
    /// RFC 7230 `token = 1*tchar`, without the uppercase letters (HTTP/2 names are lowercase):
    ///
    ///     tchar          = %x21 / %x23-27 / %x2A / %x2B / %x2D / %x2E / %x30-39 / %x5E-7A
    ///                    / %x7C / %x7E
    fileprivate var upstreamIsValidFieldName: Bool {
        if self.isEmpty {
            return false
        }

        return self.allSatisfy { codeUnit in
            switch codeUnit {
            case 0x21, 0x23...0x27, 0x2a, 0x2b, 0x2d, 0x2e, 0x30...0x39,
                0x5e...0x7a, 0x7c, 0x7e:
                return true
            default:
                return false
            }
        }
    }
}
