import NIOCore
import Testing

@testable import AuthGateway

@Suite("TargetSelector")
struct TargetSelectorTests {
    private let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    private func picks(_ selector: inout TargetSelector, _ count: Int, now: NIODeadline, excluding: Set<Int> = []) -> [Int?] {
        (0..<count).map { _ in selector.pick(now: now, excluding: excluding) }
    }

    @Test("round robin over all targets")
    func roundRobin() {
        var selector = TargetSelector(count: 3)
        #expect(picks(&selector, 7, now: start) == [0, 1, 2, 0, 1, 2, 0])
        var single = TargetSelector(count: 1)
        #expect(picks(&single, 3, now: start) == [0, 0, 0])
    }

    @Test("a target in cooldown is skipped")
    func skipsCooldown() {
        var selector = TargetSelector(count: 3, cooldown: .seconds(2))
        selector.connectFailed(1, now: start)
        #expect(selector.isCoolingDown(1, now: start))
        #expect(!selector.isCoolingDown(0, now: start))
        #expect(picks(&selector, 4, now: start + .seconds(1)) == [0, 2, 0, 2])
    }

    @Test("when every target is cooling down, one is still returned, and they rotate")
    func allCoolingDown() {
        var selector = TargetSelector(count: 3, cooldown: .seconds(2))
        for index in 0..<3 { selector.connectFailed(index, now: start) }
        let chosen = picks(&selector, 3, now: start + .milliseconds(500))
        #expect(chosen.allSatisfy { $0 != nil })
        #expect(Set(chosen.compactMap { $0 }) == [0, 1, 2])
    }

    @Test("the exclusion set is honoured; nil when every target was tried")
    func exclusion() {
        var selector = TargetSelector(count: 3)
        #expect(selector.pick(now: start, excluding: [0]) == 1)
        #expect(selector.pick(now: start, excluding: [2]) == 0)
        #expect(selector.pick(now: start, excluding: [0, 1, 2]) == nil)
        // An excluded target is not used as the cooling-down fallback either.
        selector.connectFailed(1, now: start)
        #expect(selector.pick(now: start, excluding: [0, 2]) == 1)
        #expect(selector.pick(now: start, excluding: [0]) == 2)
        selector.connectFailed(2, now: start)
        #expect(selector.pick(now: start, excluding: [0]) != nil)
        #expect(selector.pick(now: start, excluding: [0]) != 0)
    }

    @Test("a target recovers when its cooldown has passed")
    func recovery() {
        var selector = TargetSelector(count: 2, cooldown: .seconds(2))
        selector.connectFailed(0, now: start)
        #expect(picks(&selector, 2, now: start + .seconds(1)) == [1, 1])
        #expect(selector.isCoolingDown(0, now: start + .milliseconds(1999)))
        #expect(!selector.isCoolingDown(0, now: start + .seconds(2)))
        #expect(Set(picks(&selector, 2, now: start + .seconds(2)).compactMap { $0 }) == [0, 1])
    }

    @Test("a successful connect ends the cooldown at once")
    func successClearsCooldown() {
        var selector = TargetSelector(count: 2, cooldown: .seconds(60))
        selector.connectFailed(0, now: start)
        selector.connectSucceeded(0)
        #expect(!selector.isCoolingDown(0, now: start))
        #expect(Set(picks(&selector, 2, now: start).compactMap { $0 }) == [0, 1])
    }

    @Test("a failure restarts the cooldown from its own time")
    func failureRestartsCooldown() {
        var selector = TargetSelector(count: 2, cooldown: .seconds(2))
        selector.connectFailed(0, now: start)
        selector.connectFailed(0, now: start + .seconds(1))
        #expect(selector.isCoolingDown(0, now: start + .milliseconds(2500)))
        #expect(!selector.isCoolingDown(0, now: start + .seconds(3)))
    }
}
