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

--- Stop the helper (`opts.helper` of `start`), then the master (TERM, wait up to 5 s), and
-- remove the prefix; idempotent.
function S.stop(self, keep_dir)
    local stop_helper = self.stop_helper
    self.stop_helper = nil
    if stop_helper then stop_helper() end
    local pid = self:pid()
    if pid then
        run("kill -TERM " .. pid .. "; i=0; while kill -0 " .. pid ..
            " 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done")
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
function M.start(opts)
    local root = run("pwd"):match("^(%S+)")
    local dir = run("mktemp -d"):match("^(%S+)")
    local port = util.closed_port()
    local user = run("id -u"):match("^0%s") ~= nil and "user root;\n" or ""
    local conf = opts.whole and table.concat({ user .. "pid " .. dir .. "/nginx.pid;",
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
    local f = assert(io.open(dir .. "/nginx.conf", "w"))
    f:write(conf)
    f:close()
    local self = setmetatable({ dir = dir, port = port, base = "http://127.0.0.1:" .. port, root = root }, server_mt)
    local env = {}
    for k, v in pairs(opts.env or {}) do env[#env + 1] = k .. "=" .. q(v) end
    table.sort(env)
    local out, code = run(string.format("%snginx -p %s -c %s/nginx.conf -e %s/error.log",
        #env > 0 and "env " .. table.concat(env, " ") .. " " or "", q(dir), q(dir), q(dir)))
    if code ~= 0 then
        local log = self:error_log()
        self:stop()
        error("nginx did not start: " .. out .. log, 0)
    end
    local curl = require "jsoncontract.transport.curl"
    for _ = 1, 50 do
        if curl.request { url = self.base .. (opts.ready or "/"), timeout_ms = 1000 } then
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
        run("sleep 0.1")
    end
    local log = self:error_log()
    self:stop()
    error("nginx did not answer on " .. self.base .. ": " .. log, 0)
end

--- Start the stand-in model for five minutes; returns the handle and the port.
-- @tparam[opt] table opts e.g. `{delay_ms = 200}` (see `jsoncontract.standin.process.start`)
function M.start_standin(opts)
    local o = { max_seconds = 300 }
    for k, v in pairs(opts or {}) do o[k] = v end
    return util.start_standin(o)
end

return M
