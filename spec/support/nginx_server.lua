-- Start and stop Debian's nginx with lua-nginx-module for specs and benches (not part of the
-- library): a temp prefix (pid file, error log, temp paths), daemon mode, 127.0.0.1 on a free
-- port, the repo's lua/, spec/ and bench/ on lua_package_path and a LuaJIT build of the core
-- (JC_NGINX_CPATH overrides build/luajit/?.so). Stopped by the master's pid.
local util = require "support.util"

local M = {}

M.MODULES = "/usr/lib/nginx/modules"
M.CPATH = os.getenv("JC_NGINX_CPATH") or "build/luajit/?.so"

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
M.q = q

-- A shell command without an ASan run's preload (mktemp leaks, and LSan would abort it).
local function run(cmd) return util.sh("env -u LD_PRELOAD sh -c " .. q(cmd)) end
M.run = run

--- Why nginx cannot run here, or nil.
function M.missing()
    local _, code = run("command -v nginx")
    if code ~= 0 then return "nginx not found on PATH" end
    for _, m in ipairs { "ndk_http_module.so", "ngx_http_lua_module.so" } do
        if not util.read(M.MODULES .. "/" .. m) then return "nginx lua module not found at " .. M.MODULES .. "/" .. m end
    end
    local core = M.CPATH:gsub("%?", "jsoncontract/core")
    if not util.read(core) then return "LuaJIT build of the core not found at " .. core .. " (make LUA=luajit)" end
    return nil
end

local server_mt = { __index = {} }
local S = server_mt.__index

--- The master's pid, or nil.
function S.pid(self)
    local pid = self.dir and util.read(self.dir .. "/nginx.pid")
    return pid and tonumber(pid:match("^%d+"))
end

--- The worker processes' pids (children of the master).
function S.workers(self)
    local pid = self:pid()
    if not pid then return {} end
    local out = {}
    for p in (run("cat /proc/" .. pid .. "/task/" .. pid .. "/children 2>/dev/null")):gmatch("%d+") do
        out[#out + 1] = tonumber(p)
    end
    return out
end

--- The error log so far.
function S.error_log(self)
    return util.read(self.dir .. "/error.log") or ""
end

--- Stop the helper (`opts.helper` of `start`), then the master (TERM, wait up to 60 s: its
-- workers run exit_worker first, and a spec may read what that writes), and remove the
-- prefix; idempotent.
function S.stop(self, keep_dir)
    local stop_helper = self.stop_helper
    self.stop_helper = nil
    if stop_helper then stop_helper() end
    local pid = self:pid()
    if pid then
        run("kill -TERM " .. pid .. "; i=0; while kill -0 " .. pid ..
            " 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done")
    end
    if self.dir and not keep_dir then run("rm -rf " .. q(self.dir)) end
    self.dir = nil
end

--- Start nginx.
-- @tparam table opts `http` (function(port, dir) -> string: the lines inside `http {}` after
--   the common ones; it must `listen 127.0.0.1:<port>`), `main` (string, lines of the main
--   context, e.g. `env` directives), `workers` (default 1), `worker_connections` (default 256),
--   `error_level` (default "warn"), `ready` (path answered on the port once it serves, default "/"),
--   `helper` (function() -> function: starts a server the spec talks to through nginx once nginx
--   serves, and returns what stops it; `stop` calls that first), `whole` (function(port, dir) ->
--   string: a whole nginx.conf as a user writes it, load_module lines and `http {}` included,
--   instead of `http`; only `pid`, `error_log` and, as root, `user root` are put before it),
--   `env` (table: environment variables nginx starts with, e.g. an API key)
-- @treturn table server `{dir, port, base}` with `stop`, `pid`, `workers`, `error_log`
-- @raise when nginx or the helper does not start (nginx is stopped again; the error log is in
--   the message)
-- The nginx.conf text of `M.start` and `M.callgrind` for `opts` (see `M.start`).
local function conf_text(opts, port, dir, root)
    local user = run("id -u"):match("^0%s") ~= nil and "user root;\n" or ""
    return opts.whole and table.concat({ user .. "pid " .. dir .. "/nginx.pid;",
        "error_log " .. dir .. "/error.log " .. (opts.error_level or "warn") .. ";",
        opts.whole(port, dir), "" }, "\n") or table.concat({
        "worker_processes " .. (opts.workers or 1) .. ";", user .. "pid " .. dir .. "/nginx.pid;",
        "error_log " .. dir .. "/error.log " .. (opts.error_level or "warn") .. ";",
        "worker_rlimit_nofile " .. ((opts.worker_connections or 256) * 2 + 64) .. ";",
        "load_module " .. M.MODULES .. "/ndk_http_module.so;",
        "load_module " .. M.MODULES .. "/ngx_http_lua_module.so;",
        opts.main or "",
        "events { worker_connections " .. (opts.worker_connections or 256) .. "; }",
        "http {",
        "  access_log off;",
        "  client_body_temp_path " .. dir .. "/body; proxy_temp_path " .. dir .. "/proxy;",
        "  fastcgi_temp_path " .. dir .. "/fcgi; uwsgi_temp_path " .. dir .. "/uwsgi;",
        "  scgi_temp_path " .. dir .. "/scgi;",
        string.format('  lua_package_path "%s/lua/?.lua;%s/lua/?/init.lua;%s/spec/?.lua;%s/bench/?.lua;;";',
            root, root, root, root),
        string.format('  lua_package_cpath "%s/%s;;";', root, M.CPATH),
        opts.http(port, dir),
        "}", "" }, "\n")
end

function M.start(opts)
    local root = run("pwd"):match("^(%S+)")
    local dir = run("mktemp -d"):match("^(%S+)")
    local env = {}
    for k, v in pairs(opts.env or {}) do env[#env + 1] = k .. "=" .. q(v) end
    table.sort(env)
    local self
    -- The port was free when picked, but anything on the machine (another spec run, an
    -- outgoing connection) may take it before nginx binds it: then a new one, twice at most.
    for attempt = 1, 3 do
        local port = util.closed_port()
        local f = assert(io.open(dir .. "/nginx.conf", "w"))
        f:write(conf_text(opts, port, dir, root))
        f:close()
        self = setmetatable({ dir = dir, port = port, base = "http://127.0.0.1:" .. port, root = root }, server_mt)
        local out, code = run(string.format("%snginx -p %s -c %s/nginx.conf -e %s/error.log",
            #env > 0 and "env " .. table.concat(env, " ") .. " " or "", q(dir), q(dir), q(dir)))
        if code == 0 then break end
        local log = self:error_log()
        if attempt == 3 or not (out .. log):find("127.0.0.1:" .. port .. " failed (98: Address already in use)", 1, true) then
            self:stop()
            error("nginx did not start: " .. out .. log, 0)
        end
        os.remove(dir .. "/error.log")
    end
    local curl = require "jsoncontract.transport.curl"
    -- (up to a minute: on a busy machine a worker's init_by_lua may take seconds)
    if util.wait_until(function() return curl.request { url = self.base .. (opts.ready or "/"), timeout_ms = 5000 } end,
            60, 0.1) then
        if opts.helper then
            local ok, stop = pcall(opts.helper)
            if not ok then
                self:stop()
                error(stop, 0)
            end
            self.stop_helper = stop
        end
        return self
    end
    local log = self:error_log()
    self:stop()
    error("nginx did not answer on " .. self.base .. ": " .. log, 0)
end

local counted_mt = { __index = {} }

--- Requests to `path` under `wrk -t1 -c1 <args>` (warm it up first: traces still being made
-- count the compiler's work), counted: the
-- callgrind dump written right after the run (instructions since the counters were zeroed
-- before it) and the requests and non-2xx answers wrk saw.
-- @tparam string path e.g. "/check"
-- @tparam string args wrk's options besides -t1 -c1 (e.g. "-d4s -s post.lua")
-- @treturn string|nil the dump's file (nil: callgrind wrote none)
-- @treturn number requests
-- @treturn number non-2xx answers
function counted_mt.__index:count(path, args)
    local url = self.base .. path
    run(string.format("callgrind_control -z %d >/dev/null 2>&1", self.pid))
    local out = run(string.format("wrk -t1 -c1 %s %s", args, url))
    run(string.format("callgrind_control -d %d >/dev/null 2>&1", self.pid))
    local dump = run(string.format("ls -t %s/cg.out.* 2>/dev/null | head -1", self.dir)):match("^(%S+)")
    return dump, tonumber(out:match("(%d+) requests in")) or 0,
        tonumber(out:match("Non%-2xx or 3xx responses:%s+(%d+)")) or 0
end

--- The total instructions of a callgrind dump (its `summary:` or `totals:` line), or nil.
-- @tparam string|nil dump a file `count` returned
-- @treturn number|nil
function M.dump_total(dump)
    local text = dump and util.read(dump) or ""
    return tonumber(text:match("\nsummary:%s*(%d+)") or text:match("\ntotals:%s*(%d+)"))
end

--- Stop the process (TERM, then wait up to 10 s) and remove its prefix unless `keep`.
function counted_mt.__index:stop(keep)
    run(string.format("kill -TERM %d; i=0; while kill -0 %d 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; "
        .. "i=$((i+1)); done", self.pid, self.pid))
    if not keep then run("rm -rf " .. q(self.dir)) end
end

--- One nginx process (no master, no daemon) under callgrind, to count the user-space
-- instructions of its requests (benches): the configuration `M.start` writes from `opts`
-- (`main`, `http`, `whole`), ready when `opts.ready` (a path; `opts.ready_cmd(base)`, a shell
-- command, instead when a GET cannot tell) answers. Needs valgrind and wrk.
-- @tparam table opts as `M.start`, plus `ready_cmd`
-- @treturn table the handle: `dir`, `base`, `pid`, `:count(path, args)`, `:stop(keep)`
-- @raise when it does not answer within 30 s (the handle stopped first)
function M.callgrind(opts)
    local root = run("pwd"):match("^(%S+)")
    local dir = run("mktemp -d"):match("^(%S+)")
    local port = util.closed_port()
    local f = assert(io.open(dir .. "/nginx.conf", "w"))
    f:write(conf_text(opts, port, dir, root))
    f:close()
    local self = setmetatable({ dir = dir, base = "http://127.0.0.1:" .. port }, counted_mt)
    self.pid = tonumber(run(string.format("valgrind --tool=callgrind --dump-instr=no --compress-strings=no "
        .. "--compress-pos=no --callgrind-out-file=%s/cg.out nginx -p %s -c %s/nginx.conf "
        .. "-g 'daemon off; master_process off;' >%s/valgrind.log 2>&1 & echo $!", dir, dir, dir, dir)):match("%d+"))
    local probe = opts.ready_cmd and opts.ready_cmd(self.base)
        or ("curl -sf -o /dev/null " .. self.base .. (opts.ready or "/"))
    for _ = 1, 100 do
        if select(2, run(probe)) == 0 then return self end
        run("sleep 0.3")
    end
    local log = util.read(dir .. "/valgrind.log") or ""
    self:stop()
    error("nginx under callgrind did not answer: " .. log, 0)
end

--- Run `fn(handle)` on one nginx under callgrind (`M.callgrind(opts)`), then stop it whatever
-- `fn` did; its prefix (the dumps, the logs) is kept when `opts.keep` is set.
-- @tparam table opts as `M.callgrind`, plus `keep`
-- @tparam function fn function(handle) -> the result
-- @return[1] what `fn` returned (its first value)
-- @return[2] nil
-- @treturn[2] string why not: nginx did not answer under callgrind, or what `fn` raised
function M.with_callgrind(opts, fn)
    local started, srv = pcall(M.callgrind, opts)
    if not started then return nil, tostring(srv) end
    local ok, res = pcall(fn, srv)
    srv:stop(opts.keep)
    if not ok then return nil, tostring(res) end
    return res
end

--- Start the stand-in model for five minutes; returns the handle and the port.
-- @tparam[opt] table opts e.g. `{delay_ms = 200}` (see `jsoncontract.standin.process.start`)
function M.start_standin(opts)
    local o = { max_seconds = 300 }
    for k, v in pairs(opts or {}) do o[k] = v end
    return util.start_standin(o)
end

return M
