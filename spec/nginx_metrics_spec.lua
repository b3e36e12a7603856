-- jsoncontract.nginx.metrics without nginx: a stand-in for ngx.shared's dict, to render what a
-- scrape sees between two of an observation's dict updates.
local function fake_dict()
    local d = { data = {} }
    function d:incr(k, v, init) self.data[k] = (self.data[k] or init) + v; return self.data[k] end
    function d:get(k) return self.data[k] end
    function d:delete(k) self.data[k] = nil end
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

    it("sums the in_flight slots of live workers only, and sweeps the dead ones' and its own", function()
        local f = io.open("/proc/self/stat", "r")
        if not f then return pending("skipped: no /proc here") end
        local me = tonumber(f:read("*a"):match("^%d+"))
        f:close()
        _G.ngx.worker = { pid = function() return me end }
        local m = metrics.new("m")
        m:gauge("jsoncontract_in_flight", { "contract", "t" }, 1)
        m:gauge("jsoncontract_in_flight", { "contract", "t" }, 1)
        -- a worker killed with -9 (pid 1 stands for a live one, a huge pid for a dead one)
        dict.data['g|1|jsoncontract_in_flight{contract="t"}'] = 3
        dict.data['g|999999999|jsoncontract_in_flight{contract="t"}'] = 5
        assert.truthy(m:render():find('\njsoncontract_in_flight{contract="t"} 5\n', 1, true), m:render())
        -- a new worker with this pid (a dead one's pid come round) starts from 0
        m:sweep()
        assert.is_nil(dict.data['g|' .. me .. '|jsoncontract_in_flight{contract="t"}'])
        assert.equal(3, dict.data['g|1|jsoncontract_in_flight{contract="t"}'])
        assert.is_nil(dict.data['g|999999999|jsoncontract_in_flight{contract="t"}'])
    end)

    it("batches counter and histogram updates in the worker: one dict update per series when its timer "
        .. "fires, the worker's own render sees them at once, gauges are written at once", function()
        local timers, incrs = {}, 0
        _G.ngx.timer = { at = function(delay, fn, arg)
            timers[#timers + 1] = { delay = delay, fn = fn, arg = arg }
            return true
        end }
        local real_incr = dict.incr
        function dict:incr(k, v, init)
            incrs = incrs + 1
            return real_incr(self, k, v, init)
        end
        local m = metrics.new("m")
        for _ = 1, 3 do m:inc("jsoncontract_requests_total", { "contract", "t", "code", 200, "outcome", "accepted" }) end
        m:observe("jsoncontract_request_attempts", { "contract", "t" }, 1)
        m:observe("jsoncontract_request_attempts", { "contract", "t" }, 1)
        assert.equal(0, incrs)
        assert.equal(1, #timers)
        assert.equal(metrics.FLUSH_MS / 1000, timers[1].delay)
        timers[1].fn(false, timers[1].arg)
        -- the counter, the bucket and the sum: one update each
        assert.equal(3, incrs)
        assert.equal(3, dict.data['v|jsoncontract_requests_total{contract="t",code="200",outcome="accepted"}'])
        assert.equal(2, dict.data['b|jsoncontract_request_attempts{contract="t"}|1'])
        assert.equal(2, dict.data['s|jsoncontract_request_attempts{contract="t"}'])
        -- a new batch, a new timer; render writes this worker's batch first
        m:inc("jsoncontract_requests_total", { "contract", "t", "code", 200, "outcome", "accepted" })
        assert.equal(2, #timers)
        assert.truthy(m:render():find('jsoncontract_requests_total{contract="t",code="200",outcome="accepted"} 4\n',
            1, true))
        m:gauge("jsoncontract_in_flight", { "contract", "t" }, 1)
        assert.equal(1, dict.data['g|0|jsoncontract_in_flight{contract="t"}'])
        -- a full dict: every update of the refused batch counts as an error
        function dict.incr() return nil, "no memory" end
        m:inc("jsoncontract_tokens_total", { "contract", "t", "direction", "input" }, 5)
        m:inc("jsoncontract_tokens_total", { "contract", "t", "direction", "input" }, 5)
        m:flush()
        assert.truthy(m:render():find("\njsoncontract_metrics_errors_total 2\n", 1, true))
    end)

    it("flush_all writes every dict's batch, whoever made the metrics (exit_worker, where timers no "
        .. "longer fire)", function()
        local other = fake_dict()
        _G.ngx.shared.other = other
        _G.ngx.timer = { at = function() return true end } -- set, never fired
        local a, b = metrics.new("m"), metrics.new("other")
        a:inc("jsoncontract_requests_total", { "contract", "t" })
        b:inc("app_jobs_total", { "queue", "q" }, 2)
        assert.is_nil(dict.data['v|jsoncontract_requests_total{contract="t"}'])
        assert.is_nil(other.data['v|app_jobs_total{queue="q"}'])
        metrics.flush_all()
        assert.equal(1, dict.data['v|jsoncontract_requests_total{contract="t"}'])
        assert.equal(2, other.data['v|app_jobs_total{queue="q"}'])
    end)

    it("writes at once where no timer can be set", function()
        _G.ngx.timer = { at = function() error("API disabled in the context of init_by_lua*") end }
        local m = metrics.new("m")
        m:inc("jsoncontract_requests_total", { "contract", "t" })
        assert.equal(1, dict.data['v|jsoncontract_requests_total{contract="t"}'])
    end)
end)
