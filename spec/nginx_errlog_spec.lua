-- jsoncontract.nginx under nginx's default error log level (Debian's `error_log ... error;`):
-- evidence with path = "log" (NOTICE) would be filtered out, so init_worker says so, once per
-- worker, naming the directive. Debian's nginx on 127.0.0.1, two workers (spec/support/nginx_server.lua).
local nginx = require "support.nginx_server"
local util = require "support.util"

describe("jsoncontract.nginx with the error log at level error", function()
    local why = nginx.missing()
    if why then
        it("runs nginx", function() pending("nginx skipped: " .. why) end)
        return
    end

    it("logs one ERR per worker naming `error_log <file> notice;` when path = \"log\" evidence would be lost",
        function()
        local srv
        finally(function() if srv then srv:stop() end end)
        local ok, err = pcall(function()
            srv = nginx.start {
                workers = 2,
                error_level = "error",
                ready = "/fixed",
                http = function(port)
                    local gw = 'require("jsoncontract.nginx")'
                    return table.concat({
                        "init_by_lua_block { " .. gw .. '.configure{ provider = "openai", model = "m", api_key = "k-123", '
                            .. 'contracts = { t = { name = "t", version = "1.0.0", instructions = "Say ok.", '
                            .. 'schema = { type = "object" } } }, evidence = { path = "log" } } }',
                        "init_worker_by_lua_block { " .. gw .. ".init_worker() }",
                        "server { listen 127.0.0.1:" .. port .. '; location = /fixed { return 200 "ok"; } }',
                    }, "\n")
                end,
            }
        end)
        if not ok then return pending("nginx skipped: " .. tostring(err):gsub("\n.*", "")) end
        local log
        util.wait_until(function()
            log = srv:error_log()
            return select(2, log:gsub("the error log's level is error", "")) >= 2
        end)
        local pids = {}
        for pid, line in log:gmatch("%[error%] (%d+)#%d+: ([^\n]*the error log's level is error[^\n]*)") do
            assert.is_nil(pids[pid], "twice in worker " .. pid)
            pids[pid] = true
            assert.truthy(line:find("`error_log <file> notice;`", 1, true), line)
            assert.truthy(line:find('path = "log"', 1, true), line)
        end
        local n = 0
        for _ in pairs(pids) do n = n + 1 end
        assert.equal(2, n, log)
    end)
end)
