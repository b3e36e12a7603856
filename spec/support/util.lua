-- Helpers shared by the specs (not part of the library): value comparison, running a
-- command, the shared-data folder, starting and stopping the local servers the specs talk to.
local core = require "jsoncontract.core"

local M = {}

--- The interpreter the specs start for subprocesses (tools/test.sh sets JC_TEST_LUA).
M.LUA = os.getenv("JC_TEST_LUA") or "lua5.4"

local HAVE_INTEGER = math.type ~= nil

-- Deep equality; `json` also tells arrays from objects (the array marker) and, where the
-- interpreter has them, integers from floats.
local function equal(a, b, json)
    if json and type(a) ~= type(b) then return false end
    if type(a) ~= "table" or type(b) ~= "table" then
        if a ~= b then return false end
        if json and HAVE_INTEGER and type(a) == "number" then return math.type(a) == math.type(b) end
        return true
    end
    if json and (getmetatable(a) == core.array_mt) ~= (getmetatable(b) == core.array_mt) then return false end
    for k, v in pairs(a) do
        if not equal(v, b[k], json) then return false end
    end
    for k in pairs(b) do
        if a[k] == nil then return false end
    end
    return true
end

--- Deep equality of plain values: same keys, equal values; metatables are not compared.
function M.deep_equal(a, b)
    return equal(a, b, false)
end

--- Equality of decoded JSON values that tells arrays from objects (the array marker), null
-- from nil and, where the interpreter has them, integers from floats.
function M.same_json(a, b)
    return equal(a, b, true)
end

--- Run a shell command with stderr joined to stdout; returns the output and the exit status
-- (LuaJIT's popen:close gives no status, so the command echoes it as its last line).
function M.sh(cmd)
    local p = io.popen(cmd .. " 2>&1; echo \"exit=$?\"")
    local out = p:read("*a")
    p:close()
    local code = tonumber(out:match("exit=(%d+)%s*$"))
    return (out:gsub("exit=%d+%s*$", "")), code
end

--- A fresh path in the temporary folder that does not exist yet (for a command to create).
function M.fresh_path()
    local d = os.tmpname()
    os.remove(d)
    return d
end

--- The whole content of a file, or nil when it cannot be opened.
function M.read(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local s = f:read("*a")
    f:close()
    return s
end

--- The whole content of a file; raises when it cannot be opened.
function M.slurp(path)
    local f = assert(io.open(path, "rb"))
    local s = f:read("*a")
    f:close()
    return s
end

--- The lines a shell command prints, in order.
function M.lines(cmd)
    local out, p = {}, io.popen(cmd)
    for l in p:lines() do out[#out + 1] = l end
    p:close()
    return out
end

--- Assert that `fn(...)` raises an error whose text holds `fragment` (plain find).
function M.raises(fragment, fn, ...)
    local luassert = require "luassert"
    local ok, msg = pcall(fn, ...)
    luassert.is_false(ok)
    luassert.truthy(tostring(msg):find(fragment, 1, true), tostring(msg))
end

--- A deterministic random source (a small LCG, the same on every interpreter): returns
-- rand(n) -> an integer in [0, n).
function M.lcg(seed)
    local x = seed
    return function(n)
        x = (x * 1103515245 + 12345) % 2147483648
        return x % n
    end
end

--- The shared data folder (JC_SHARED, else "../shared" from the repo root), or a path in it.
-- @treturn string path
function M.shared(sub)
    local root = os.getenv("JC_SHARED") or "../shared"
    return sub and root .. "/" .. sub or root
end

--- The path of `sub` in the shared data folder when it exists, else nil and the message for
-- `pending` ("<what> not found at <path>"; `what` defaults to `sub`).
function M.shared_path(sub, what)
    local path = M.shared(sub)
    local ok = os.rename(path, path)
    if ok then return path end
    return nil, (what or sub) .. " not found at " .. path
end

--- Start a server command that prints its port on its first line; `pattern` captures the
-- port in that line. Returns the pipe and the port (a number); raises when no port came.
function M.start_server(cmd, pattern)
    local pipe = assert(io.popen(cmd, "r"))
    local line = pipe:read("*l")
    local port = line and tonumber(line:match(pattern))
    assert(port, "server did not print its port: " .. tostring(line))
    return pipe, port
end

--- Start the fault server (`jsoncontract.standin.faults`, through `bin/jsoncontract
-- _fault-server`; without the sanitizer preload of an ASan run) for `lifetime` seconds;
-- returns the pipe and the port.
function M.start_fault_server(lifetime)
    return M.start_server(string.format("env -u LD_PRELOAD %s bin/jsoncontract _fault-server %d",
        M.LUA, lifetime), "^PORT (%d+)$")
end

--- Stop the fault server (GET /quit) and close its pipe.
function M.stop_fault_server(pipe, port)
    core.http_request { url = "http://127.0.0.1:" .. port .. "/quit", timeout_ms = 5000 }
    pipe:close()
end

--- Start the stand-in model (`jsoncontract.standin.process`, without the sanitizer preload of
-- an ASan run) on a free port for at most `opts.max_seconds` (default a minute); returns the
-- handle and its port. `opts` as for `jsoncontract.standin.process.start`.
function M.start_standin(opts)
    local o = { max_seconds = 60, without_preload = true }
    for k, v in pairs(opts or {}) do o[k] = v end
    local h = assert(require("jsoncontract.standin.process").start(o))
    return h, h.port
end

--- Stop the stand-in model started by `start_standin`.
function M.stop_standin(handle)
    handle.stop()
end

--- Call `fn` until it returns a truthy value or `seconds` (default 30) of wall time pass,
-- pausing `step` seconds (default 0.05) between calls; returns what its last call returned (one
-- value). For conditions another process or a timer makes true: the bound is time, not a count
-- of tries, so a slow or stalled machine gets the whole bound.
function M.wait_until(fn, seconds, step)
    local socket = require "socket"
    local deadline = socket.gettime() + (seconds or 30)
    while true do
        local v = fn()
        if v or socket.gettime() >= deadline then return v end
        socket.sleep(step or 0.05)
    end
end

--- A port on 127.0.0.1 that nobody listens on (bound, read, closed).
function M.closed_port()
    local s = assert(require("socket").bind("127.0.0.1", 0))
    local _, port = s:getsockname()
    s:close()
    return tonumber(port)
end

--- { {pointer, keyword}, ... } of a schema err's errors, for assert.same.
function M.errs(err)
    local out = {}
    for i, e in ipairs(err.errors) do out[i] = { e.pointer, e.keyword } end
    return out
end

--- The messages of a schema err's errors, in order.
function M.msgs(err)
    local out = {}
    for i, e in ipairs(err.errors) do out[i] = e.message end
    return out
end

--- Options for jc.ask against the fake transport `send` (spec/support/fake_model.lua): the
-- openai provider, model "fake-1", a base URL nobody listens on, no sleeping. Fills `opts`
-- (or a new table) and returns it.
function M.fake_opts(send, opts)
    opts = opts or {}
    opts.provider, opts.model, opts.base_url = "openai", "fake-1", "http://127.0.0.1:9"
    opts.transport, opts.sleep = send, function() end
    return opts
end

return M
