describe("jsoncontract.core", function()
  it("loads and exposes null and the array marker", function()
    local core = require "jsoncontract.core"
    assert.is_nil(core.null and nil)
    assert.equal("userdata", type(core.null))
    assert.equal("table", type(core.array_mt))
  end)
end)
