-- Start and stop `bin/jsoncontract review` (nginx) in the background for a spec, on a free
-- 127.0.0.1 port; stopped by its PID.
local curl = require "jsoncontract.transport.curl"
local util = require "support.util"

local M = {}

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
-- Without an ASan run's preload: nginx must not inherit it.
function M.run(cmd) return util.sh("env -u LD_PRELOAD sh -c " .. q(cmd)) end
M.q = q

--- Why the desk cannot run here (nginx, its Lua module, the LuaJIT core), or nil.
function M.missing()
    local why = require("jsoncontract.review.serve").missing()
    if why then return why end
    if not util.read("build/luajit/jsoncontract/core.so") then
        return "LuaJIT build of the core not found at build/luajit/jsoncontract/core.so (make LUA=luajit)"
    end
    return nil
end

--- Start the desk on `target` (default `dir`) with extra command-line text; its output goes to a
-- log in `dir`. Returns `{pid, port, base, log, rcfile, prefix, nginx}`; raises when it did not start.
function M.start(dir, extra, target)
    local port = util.closed_port()
    local h = { port = port, base = "http://127.0.0.1:" .. port, log = dir .. "/desk-" .. port .. ".log",
        rcfile = dir .. "/desk-" .. port .. ".rc" }
    local pidfile = dir .. "/desk-" .. port .. ".pid"
    M.run(string.format("(%s bin/jsoncontract review %s --listen 127.0.0.1:%d %s >%s 2>&1 & echo $! >%s; wait $!; "
        .. "echo $? >%s) >/dev/null 2>&1 &", q(util.LUA), q(target or dir), port, extra or "", q(h.log), q(pidfile),
        q(h.rcfile)))
    -- (up to a minute: on a busy machine the desk's nginx may take seconds to answer)
    local up = util.wait_until(function()
        local log = util.read(h.log) or ""
        h.pid = (util.read(pidfile) or ""):match("%d+")
        h.prefix = log:match("files in (%S+) %(removed")
        h.nginx = log:match("nginx (%d+), files in")
        if h.prefix and h.pid and curl.request { url = h.base .. "/desk.css", timeout_ms = 5000 } then return "up" end
        if util.read(h.rcfile) then return "ended" end
    end, 60)
    if up == "up" then return h end
    error("the desk did not start: " .. (util.read(h.log) or "(no output)"))
end

--- Stop it with a signal (default TERM); returns its exit status (nil when it did not stop within 60 s).
function M.stop(h, sig)
    if not h or not h.pid then return nil end
    local done = util.read(h.rcfile)
    if done and done:match("%d+") then return tonumber(done:match("%d+")) end
    M.run("kill -" .. (sig or "TERM") .. " " .. h.pid)
    local rc = util.wait_until(function() return (util.read(h.rcfile) or ""):match("%d+") end, 60)
    if rc then return tonumber(rc) end
    M.run("kill -KILL " .. h.pid)
    if h.nginx then M.run("kill -KILL " .. h.nginx) end
    return nil
end

return M
