-- The rules gate inside nginx (Debian's nginx with the lua module, one worker, started on
-- 127.0.0.1 as in spec/openresty_spec.lua): a rule with an endless loop is stopped by its
-- budget (the count hook fires: rules run compiled off), and a rule waiting on ngx.sleep or
-- a slow cosocket read times out as rules/rule_timeout while the same worker answers other
-- requests, so a slow database never blocks it. Handlers: spec/support/rules_nginx_app.lua.
local jc = require "jsoncontract"
local curl = require "jsoncontract.transport.curl"
local util = require "support.util"

local CPATH = os.getenv("JC_NGINX_CPATH") or "build/luajit/?.so"
local MODULES = "/usr/lib/nginx/modules"

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
local function run(cmd) return util.sh("env -u LD_PRELOAD sh -c " .. q(cmd)) end

local function missing()
    local _, code = run("command -v nginx")
    if code ~= 0 then return "nginx not found on PATH" end
    for _, m in ipairs { "ndk_http_module.so", "ngx_http_lua_module.so" } do
        if not util.read(MODULES .. "/" .. m) then return "nginx lua module not found at " .. MODULES .. "/" .. m end
    end
    local core = CPATH:gsub("%?", "jsoncontract/core")
    if not util.read(core) then return "LuaJIT build of the core not found at " .. core .. " (make LUA=luajit)" end
    return nil
end

describe("the rules gate in nginx", function()
    local why = missing()
    if why then
        it("runs nginx", function() pending(why) end)
        return
    end

    local root = run("pwd"):match("^(%S+)")
    local dir, base, fault, fault_port

    local function get(path)
        local res, err = curl.request { url = base .. path, timeout_ms = 30000 }
        assert(res, tostring(err))
        assert.equal(200, res.status, res.body)
        return jc.decode(res.body)
    end

    local function stop_nginx()
        local pid = dir and util.read(dir .. "/nginx.pid")
        if pid and pid:match("^%d+") then
            pid = pid:match("^%d+")
            run("kill -TERM " .. pid .. "; i=0; while kill -0 " .. pid ..
                " 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done")
        end
        if dir then run("rm -rf " .. q(dir)) end
        dir = nil
    end

    setup(function()
        dir = run("mktemp -d"):match("^(%S+)")
        local port = util.closed_port()
        base = "http://127.0.0.1:" .. port
        local user = run("id -u"):match("^0%s") ~= nil and "user root;\n" or ""
        local conf = table.concat({
            "worker_processes 1;", user .. "pid " .. dir .. "/nginx.pid;",
            "error_log " .. dir .. "/error.log warn;",
            "load_module " .. MODULES .. "/ndk_http_module.so;",
            "load_module " .. MODULES .. "/ngx_http_lua_module.so;",
            "events { worker_connections 64; }",
            "http {",
            "  access_log off;",
            "  client_body_temp_path " .. dir .. "/body; proxy_temp_path " .. dir .. "/proxy;",
            "  fastcgi_temp_path " .. dir .. "/fcgi; uwsgi_temp_path " .. dir .. "/uwsgi;",
            "  scgi_temp_path " .. dir .. "/scgi;",
            "  lua_shared_dict rules 1m;",
            string.format('  lua_package_path "%s/lua/?.lua;%s/lua/?/init.lua;%s/spec/?.lua;;";', root, root, root),
            string.format('  lua_package_cpath "%s/%s;;";', root, CPATH),
            '  init_by_lua_block { require("support.rules_nginx_app").init() }',
            "  server {",
            "    listen 127.0.0.1:" .. port .. ";",
            '    location = /rule { content_by_lua_block { require("support.rules_nginx_app").rule() } }',
            '    location = /ping { content_by_lua_block { require("support.rules_nginx_app").ping() } }',
            "  }",
            "}", "" }, "\n")
        local f = assert(io.open(dir .. "/nginx.conf", "w"))
        f:write(conf)
        f:close()
        local out, code = run(string.format("nginx -p %s -c %s/nginx.conf -e %s/error.log", q(dir), q(dir), q(dir)))
        if code ~= 0 then
            local log = util.read(dir .. "/error.log") or ""
            stop_nginx()
            error("nginx did not start: " .. out .. log)
        end
        for _ = 1, 50 do
            if curl.request { url = base .. "/ping", timeout_ms = 1000 } then break end
            run("sleep 0.1")
        end
        local ok, err = pcall(function() fault, fault_port = util.start_fault_server(120) end)
        if not ok then
            stop_nginx()
            error(err, 0)
        end
    end)

    teardown(function()
        if fault then util.stop_fault_server(fault, fault_port) end
        stop_nginx()
    end)

    it("passes a rule that returns", function()
        assert.is_true(get("/rule?kind=ok").ok)
    end)

    it("stops an endless loop by its step budget, and the worker answers after", function()
        local out = get("/rule?kind=loop")
        assert.same({ "rules", "rule_timeout", "steps", "loop" }, { out.category, out.kind, out.limit, out.rule })
        assert.is_true(get("/ping").pong)
    end)

    it("stops an endless loop by its wall time (the clock is read in the loop)", function()
        local out = get("/rule?kind=spin")
        assert.same({ "rule_timeout", "ms" }, { out.kind, out.limit })
        assert.is_true(get("/ping").pong)
    end)

    for _, kind in ipairs { "sleep", "cosocket" } do
        it("times out a rule waiting on " .. (kind == "sleep" and "ngx.sleep" or "a slow cosocket read")
            .. " while the worker serves another request", function()
            local res = curl.request_many({
                { url = base .. "/rule?kind=" .. kind .. "&port=" .. fault_port, timeout_ms = 30000 },
                { url = base .. "/ping?wait=1", timeout_ms = 30000 },
            }, { max_parallel = 2 })
            assert.equal(200, res[1].status, tostring(res[1].body or res[1].message))
            assert.equal(200, res[2].status, tostring(res[2].body or res[2].message))
            local out, ping = jc.decode(res[1].body), jc.decode(res[2].body)
            assert.same({ "rules", "rule_timeout", "ms", kind }, { out.category, out.kind, out.limit, out.rule })
            assert.is_true(ping.served_while_rule_waited)
        end)
    end

    it("leaves nothing in the error log but what nginx says itself", function()
        local log = util.read(dir .. "/error.log") or ""
        assert.falsy(log:find("[error]", 1, true), log)
    end)
end)
