import NIOCore
import Testing

@testable import AuthGateway

@Suite("TargetSelector")
struct TargetSelectorTests {
    private func picks(_ selector: inout TargetSelector, _ count: Int, excluding: Set<Int> = []) -> [Int?] {
        (0..<count).map { _ in selector.pick(excluding: excluding) }
    }

    @Test("round robin over all targets")
    func roundRobin() {
        var selector = TargetSelector(count: 3)
        #expect(picks(&selector, 7) == [0, 1, 2, 0, 1, 2, 0])
        var single = TargetSelector(count: 1)
        #expect(picks(&single, 3) == [0, 0, 0])
    }

    @Test("a target out of rotation is skipped")
    func skipsOutOfRotation() {
        var selector = TargetSelector(count: 3)
        selector.outOfRotation = 0b010
        #expect(selector.isOut(1))
        #expect(!selector.isOut(0))
        #expect(picks(&selector, 4) == [0, 2, 0, 2])
    }

    @Test("when every target is out of rotation, one is still returned, and they rotate (panic routing)")
    func allOut() {
        var selector = TargetSelector(count: 3)
        selector.outOfRotation = 0b111
        let chosen = picks(&selector, 3)
        #expect(chosen.allSatisfy { $0 != nil })
        #expect(Set(chosen.compactMap { $0 }) == [0, 1, 2])
    }

    @Test("the exclusion set is honoured; nil when every target was tried")
    func exclusion() {
        var selector = TargetSelector(count: 3)
        #expect(selector.pick(excluding: [0]) == 1)
        #expect(selector.pick(excluding: [2]) == 0)
        #expect(selector.pick(excluding: [0, 1, 2]) == nil)
        // A tried target is not used as the out-of-rotation fallback either.
        selector.outOfRotation = 0b010
        #expect(selector.pick(excluding: [0, 2]) == 1)
        #expect(selector.pick(excluding: [0]) == 2)
        selector.outOfRotation = 0b110
        #expect(selector.pick(excluding: [0]) != nil)
        #expect(selector.pick(excluding: [0]) != 0)
    }

    @Test("a target back in rotation is chosen again")
    func recovery() {
        var selector = TargetSelector(count: 2)
        selector.outOfRotation = 0b01
        #expect(picks(&selector, 2) == [1, 1])
        selector.outOfRotation = 0
        #expect(Set(picks(&selector, 2).compactMap { $0 }) == [0, 1])
    }
}
