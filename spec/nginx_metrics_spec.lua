-- jsoncontract.nginx.metrics without nginx: a stand-in for ngx.shared's dict, to render what a
-- scrape sees between two of an observation's dict updates.
local function fake_dict()
    local d = { data = {} }
    function d:incr(k, v, init) self.data[k] = (self.data[k] or init) + v; return self.data[k] end
    function d:get(k) return self.data[k] end
    function d:get_keys()
        local ks = {}
        for k in pairs(self.data) do ks[#ks + 1] = k end
        return ks
    end
    return d
end

describe("jsoncontract.nginx.metrics", function()
    local saved = rawget(_G, "ngx")
    local metrics, dict
    before_each(function()
        dict = fake_dict()
        _G.ngx = { shared = { m = dict } }
        package.loaded["jsoncontract.nginx.metrics"] = nil
        metrics = require "jsoncontract.nginx.metrics"
    end)
    after_each(function() _G.ngx = saved end)

    it("renders _count equal to the +Inf bucket even when a scrape falls between an observation's updates", function()
        local m = metrics.new("m")
        m:observe("jsoncontract_request_attempts", { "contract", "t" }, 1)
        m:observe("jsoncontract_request_attempts", { "contract", "t" }, 2)
        -- a third observation whose bucket is counted, its sum not yet (another worker, mid-way),
        -- and a count key left by an older version, one behind
        dict:incr('b|jsoncontract_request_attempts{contract="t"}|3', 1, 0)
        dict.data['c|jsoncontract_request_attempts{contract="t"}'] = 1
        local text = m:render()
        local inf = text:match('jsoncontract_request_attempts_bucket{contract="t",le="%+Inf"} (%d+)')
        local count = text:match('jsoncontract_request_attempts_count{contract="t"} (%d+)')
        assert.same({ "3", "3" }, { inf, count })
        assert.truthy(text:find('jsoncontract_request_attempts_sum{contract="t"} 3\n', 1, true), text)
    end)
end)
