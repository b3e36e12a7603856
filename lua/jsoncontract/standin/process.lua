--- The stand-in model server as a child process: the one way anything (a command, a job, a spec,
-- a benchmark) starts it. The child is this Lua interpreter running `jsoncontract.standin.server`
-- on 127.0.0.1 with our `package.path` and `package.cpath`, so it finds the modules wherever we
-- found them (a checkout named by LUA_PATH, a LuaRocks tree off the default paths, the system),
-- from whatever folder we run in. `start` returns once the server listens.
--
-- Every server started here is stopped on every way out: `handle.stop()`, `stop_all()` (what
-- the command line calls after an error no command caught), and, on Lua 5.2+, a finalizer
-- when the Lua state closes with the handle still running (finalizers run in the reverse order
-- of their objects' creation, so the server is told to stop before the pipe to it is closed;
-- closing that pipe first would wait for a server that waits for us). A LuaJIT script that
-- lets an error end it calls `stop_all()` first (the command line does). The server also
-- leaves by itself once we are gone (`exit_with_parent`).
-- @module jsoncontract.standin.process
local socket = require "socket"

local type, tostring, tonumber, pairs, error, pcall, setmetatable =
    type, tostring, tonumber, pairs, error, pcall, setmetatable
local format, gsub = string.format, string.gsub
local concat = table.concat

local _M = { _VERSION = "0.1.0" }

-- The servers started and not yet stopped: handle -> true.
local running = {}
-- How long a server may take to leave after /shutdown or TERM before the next, harder, step.
local STOP_WAIT_S = 1

--- The interpreter running us (the first word of the command line Lua was started with), to
-- start helpers with the same Lua.
-- @treturn string e.g. "lua5.4", "/usr/bin/luajit"
function _M.interpreter()
    local i = -1
    while arg and arg[i - 1] do i = i - 1 end
    return arg and arg[i] or (jit and "luajit" or "lua5.4")
end

local function shell_quote(s)
    return "'" .. gsub(tostring(s), "'", "'\\''") .. "'"
end

-- Options of `start` -> their type; each becomes the option of `jsoncontract.standin.server.run`
-- of the same name.
local SERVER_OPTS = {
    seed = "number", delay_ms = "number", latency = "string", max_seconds = "number",
    max_requests = "number", idle_seconds = "number", examples_dir = "string", log = "string",
    exit_with_parent = "boolean",
}
local OWN_OPTS = { interpreter = "string", without_preload = "boolean" }

-- A Lua literal for a checked option value.
local function literal(v)
    if type(v) == "string" then return format("%q", v) end
    if type(v) == "number" then return format("%.17g", v) end
    return tostring(v)
end

-- The examples folder of the checkout this module was loaded from (lua/jsoncontract/standin/ ->
-- examples/), when it has the examples' stand-in files; else nil.
local function checkout_examples()
    -- (package.searchpath, which 5.1 lacks: the first template of package.path that names a file)
    local root
    for template in package.path:gmatch("[^;]+") do
        local path = gsub(template, "%?", "jsoncontract/standin/process")
        local f = io.open(path, "rb")
        if f then
            f:close()
            root = path:match("^(.*)/lua/jsoncontract/standin/process%.lua$")
                or (path:match("^lua/jsoncontract/standin/process%.lua$") and ".")
            break
        end
    end
    if not root then return nil end
    local dir = root .. "/examples"
    local f = io.open(dir .. "/support_ticket_standin.lua", "rb")
    if not f then return nil end
    f:close()
    return dir
end

-- Has process `pid` (our child) ended within `seconds`? Linux: it is a zombie (state Z, left
-- for the pipe's close to reap) or gone. Elsewhere nothing tells: yes, and the close waits.
local function gone(pid, seconds)
    local deadline = socket.gettime() + seconds
    repeat
        local f = io.open("/proc/" .. pid .. "/stat", "rb")
        if not f then return true end
        local stat = f:read("*a") or ""
        f:close()
        if stat:match("^%d+ %b() (%a)") == "Z" then return true end
        socket.sleep(0.01)
    until socket.gettime() > deadline
    return false
end

-- POST /shutdown; true when the server answered.
local function shutdown(port)
    local c = socket.tcp()
    -- (a server on loopback that does not answer within a second is ended by its pid instead)
    c:settimeout(1)
    if not c:connect("127.0.0.1", port) then
        c:close()
        return false
    end
    c:send("POST /shutdown HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    local line = c:receive("*l")
    c:receive("*a")
    c:close()
    return line ~= nil
end

--- Why a stand-in did not start, in words, from what it wrote on our pipe and how it ended.
-- @tparam string|nil line its first line after the pid ("failed: <reason>" when it could say)
-- @tparam string|nil rest whatever else it wrote there
-- @tparam string|nil how "exit" or "signal" (from `close`; nil where the Lua does not tell)
-- @tparam integer|nil status the exit status or signal number
-- @treturn string e.g. "latency must be ...", "it exited with status 1 before listening"
function _M.failure(line, rest, how, status)
    local ended = ""
    if how == "signal" then
        ended = format("it was killed by signal %s before listening", tostring(status))
    elseif how == "exit" and status then
        ended = format("it exited with status %s before listening", tostring(status))
    end
    local said = line and line:match("^failed: (.*)$")
    if said then return said end
    local other = line and (line .. ((rest or ""):match("%S") and ("; " .. rest:gsub("%s+$", "")) or ""))
    if other then
        return (ended ~= "" and (ended .. "; ") or "") .. "it said: " .. other:sub(1, 400)
    end
    return ended ~= "" and (ended .. " (its own words, if any, went to its stderr)")
        or "it ended before listening, saying nothing here (its own words, if any, went to its stderr)"
end

--- Start the stand-in model server on 127.0.0.1, on a free port, as our child.
-- @tparam[opt] table opts `seed` (integer, default 1), `delay_ms` (number, ms added to every
--   answer, default 0), `latency` (string: a latency spec, see `jsoncontract.standin.server.latency`),
--   `max_seconds`, `max_requests`, `idle_seconds` (numbers: when it stops by itself; default none),
--   `examples_dir` (string: the folder of the examples' `<name>_standin.lua`; default the
--   `examples/` of the checkout this module was loaded from, when there is one),
--   `log` (string: file of one line per model request), `exit_with_parent` (boolean, default true:
--   it leaves once we are gone, even after our kill -9), `interpreter` (string, default
--   `interpreter()`), `without_preload` (boolean: start it without LD_PRELOAD, e.g. a sanitizer's)
-- @treturn[1] table handle `{pid = integer, port = integer, base_url = "http://127.0.0.1:<port>",
--   stop = function()}`; `stop()` asks it to shut down (POST /shutdown), else ends it by its pid,
--   and waits for it; a second `stop()` does nothing
-- @return[2] nil
-- @treturn[2] string why it did not start
-- @raise on an unknown option or a value of the wrong type
-- @usage local h = assert(process.start { seed = 1 }); ...; h.stop()
function _M.start(opts)
    opts = opts or {}
    if type(opts) ~= "table" then error("opts must be a table", 2) end
    for k, v in pairs(opts) do
        local want = SERVER_OPTS[k] or OWN_OPTS[k]
        if not want then error("unknown option '" .. tostring(k) .. "'", 2) end
        if type(v) ~= want then error(format("option '%s' must be a %s, got %s", k, want, type(v)), 2) end
    end
    local run = { "port = 0", 'host = "127.0.0.1"' }
    local given = {}
    for k, v in pairs(opts) do given[k] = v end
    if given.exit_with_parent == nil then given.exit_with_parent = true end
    if given.examples_dir == nil then given.examples_dir = checkout_examples() end
    for k in pairs(SERVER_OPTS) do
        if given[k] ~= nil then run[#run + 1] = k .. " = " .. literal(given[k]) end
    end
    -- Why it failed goes to its stderr (where the user sees it) and also, as one "failed: " line,
    -- to the pipe we read: a module it cannot load or an error raised while starting, too.
    local code = format("package.path = %q; package.cpath = %q\n"
        .. "local ok, started, err = pcall(function() return require(\"jsoncontract.standin.server\").run { %s, "
        .. "on_ready = function(port)\n"
        .. "io.stdout:write(\"listening 127.0.0.1:\", port, \"\\n\"); io.stdout:flush() end } end)\n"
        .. "if not (ok and started) then local why = tostring(ok and err or started)\n"
        .. "io.stderr:write(\"stand-in: \", why, \"\\n\"); io.stdout:write(\"failed: \", (why:gsub(\"%%s+\", \" \")), "
        .. "\"\\n\"); os.exit(1) end",
        package.path, package.cpath, concat(run, ", "))
    -- `echo $$` gives the shell's pid, which `exec` hands on to the interpreter: the pid is the
    -- server's, and we are its parent (what exit_with_parent watches). An interpreter the shell
    -- cannot find is said on the pipe too (exec's own message goes to stderr only).
    local interp = shell_quote(opts.interpreter or _M.interpreter())
    local cmd = format("echo $$; command -v %s >/dev/null 2>&1 || { echo %s; exit 127; }; exec %s%s -e %s", interp,
        shell_quote("failed: cannot run the interpreter " .. (opts.interpreter or _M.interpreter()) .. " (not found)"),
        opts.without_preload and "env -u LD_PRELOAD " or "", interp, shell_quote(code))
    local proc = io.popen(cmd, "r")
    if not proc then return nil, "the stand-in model did not start (cannot run " .. cmd:sub(1, 80) .. ")" end
    local pid = tonumber(proc:read("*l") or "")
    local line = proc:read("*l")
    local port = line and tonumber(line:match("^listening 127%.0%.0%.1:(%d+)$"))
    if not (pid and port) then
        local rest = proc:read("*a")
        -- Lua 5.2+ says how it ended; LuaJIT's close gives only true.
        local _, how, status = proc:close()
        return nil, "the stand-in model did not start: " .. _M.failure(line, rest, how, status)
    end
    local stopped = false
    local handle = { pid = pid, port = port, base_url = "http://127.0.0.1:" .. port }
    function handle.stop()
        if stopped then return end
        stopped = true
        running[handle] = nil
        if not (shutdown(port) and gone(pid, STOP_WAIT_S)) then
            os.execute("kill " .. pid .. " 2>/dev/null")
            if not gone(pid, STOP_WAIT_S) then os.execute("kill -KILL " .. pid .. " 2>/dev/null") end
        end
        -- (already closed when the Lua state is closing and closed the pipe first)
        pcall(proc.close, proc)
    end
    running[handle] = true
    -- Lua 5.2+: a state closed with the server still running stops it first (see the module
    -- description). Not LuaJIT/5.1: a table has no __gc there, and a userdata's finalizer runs
    -- after the pipe's close and after luasocket's library was unloaded.
    setmetatable(handle, { __gc = function(h) pcall(h.stop) end })
    return handle
end

--- Stop every stand-in server this process started and has not stopped yet (each as
-- `handle.stop()` does: POST /shutdown, then TERM, then KILL, a second each at most, and the
-- pipe closed). For the way out after an error no command caught: without it, closing the Lua
-- state would wait on the server's pipe until the server gave up by itself.
-- @treturn integer how many were stopped
function _M.stop_all()
    local n = 0
    for h in pairs(running) do
        n = n + 1
        pcall(h.stop)
    end
    return n
end

return _M
