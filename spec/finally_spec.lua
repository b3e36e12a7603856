-- The spec helper (spec/support/finally_helper.lua): every `finally` of a test runs, last first.
describe("finally in a spec", function()
    local ran = {}

    it("registers three cleanups", function()
        finally(function() ran[#ran + 1] = "first" end)
        finally(function() ran[#ran + 1] = "second" end)
        finally(function() ran[#ran + 1] = "third" end)
    end)

    it("ran all three after the test, the last registered first", function()
        assert.same({ "third", "second", "first" }, ran)
    end)
end)
