import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

#if canImport(Glibc)
import Glibc
#endif

/// A real browser for the sign-in tests: Debian's `chromium`, driven through `chromium-driver`
/// by Python `selenium` in `Fixtures/browser/browser_sign_in.py`, which walks one flow and
/// reports what it saw as JSON.
///
/// Nothing here skips: a missing `chromium`, `chromedriver`, `python3` or `selenium` fails the
/// test with how to install it (`.ci/run` installs them all). Every step of the script waits at
/// most `stepSeconds`, the script ends itself after `deadlineSeconds`, and the test kills it
/// (and the browser, in its process group) a minute after that: the bounds are generous for a
/// loaded machine and only lengthen a failing test.
enum HeadlessBrowser {
    static let script = Fixtures.url("browser/browser_sign_in.py").path
    static let stepSeconds = 90
    static let deadlineSeconds = 420

    /// A flow the script does not finish: the step it was at, where the browser was, and the
    /// script's standard error.
    struct FlowFailed: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `flow` against the gateway at `gateway` (its `publicBaseURL`); the script's report.
    static func run(flow: String, gateway: String, arguments: [String] = []) async throws -> JSONValue {
        let python = try ExternalTool.require("python3", package: "python3")
        let chromium = try ExternalTool.require("chromium", package: "chromium")
        let driver = try ExternalTool.require("chromedriver", package: "chromium-driver")
        guard FileManager.default.fileExists(atPath: Self.script) else { throw ExternalTool.Missing(name: Self.script) }
        let child = try ChildProcess(
            [
                python, Self.script, "--flow", flow, "--gateway", gateway, "--chromium", chromium, "--chromedriver",
                driver, "--timeout", String(Self.stepSeconds), "--deadline", String(Self.deadlineSeconds),
            ] + arguments)
        defer {
            // The script leads its own process group (the browser and its driver are in it): a
            // run that hung or died leaves nothing behind.
            _ = Glibc.kill(-child.processIdentifier, SIGKILL)
        }
        try await child.exited(timeout: .seconds(Self.deadlineSeconds + 60))
        let (status, output, errors) = (child.terminationStatus, child.standardOutput, child.standardError)
        if status == 3 {
            // Its standard error names what is missing and how to install it.
            throw FlowFailed(description: errors.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        guard let report = try? JSONValue(parsing: output) else {
            throw FlowFailed(
                description: "browser_sign_in.py --flow \(flow) exited \(status) without a report: \(output) \(errors)")
        }
        if let error = report["error"] {
            throw FlowFailed(
                description:
                    "the \(flow) flow failed at \(error.jsonText): \(report.jsonText); standard error: \(errors)")
        }
        guard status == 0 else {
            throw FlowFailed(description: "browser_sign_in.py exited \(status): \(output) \(errors)")
        }
        return report
    }

    /// The cookies of `report` (a page the script landed on) set for `domain`, by name.
    static func cookies(_ report: JSONValue?, domain: String) -> [String: JSONValue] {
        var found: [String: JSONValue] = [:]
        for cookie in report?["cookies"]?.arrayValue ?? [] where cookie["domain"]?.stringValue == domain {
            if let name = cookie["name"]?.stringValue { found[name] = cookie }
        }
        return found
    }
}

extension JSONValue {
    /// An echoed header's values, from the echo backend's answer a page showed.
    func echoed(_ header: String) -> [String] {
        self["echo"]?["headers"]?[header.lowercased()]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    var int: Int? { self.numberValue?.exactInt }
}
