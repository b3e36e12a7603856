-- Helpers for the batch job specs: background processes by pid, a throw-away PostgreSQL
-- server (initdb into a temporary folder as an unprivileged user), stand-in request logs.
local core = require "jsoncontract.core"
local util = require "support.util"

local M = {}

local socket = require "socket"
M.sleep, M.now = socket.sleep, socket.gettime

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
M.q = q

--- Start `cmd` in the background (no sanitizer preload), output to `log`; returns its pid.
function M.spawn(cmd, log, env)
    local p = io.popen(("env -u LD_PRELOAD %s sh -c %s >%s 2>&1 & echo $!"):format(env or "",
        q("exec " .. cmd), q(log)))
    local pid = tonumber(p:read("*l"))
    p:close()
    return pid
end

--- Is the process alive (not gone, not a zombie)?
function M.alive(pid)
    local f = io.open("/proc/" .. pid .. "/stat", "rb")
    if not f then return false end
    local s = f:read("*a") or ""
    f:close()
    return not s:match("%) [ZX] ")
end

--- Wait up to `seconds` for the process to end; true when it did.
function M.wait_gone(pid, seconds)
    local deadline = M.now() + (seconds or 10)
    while M.now() < deadline do
        if not M.alive(pid) then return true end
        M.sleep(0.05)
    end
    return not M.alive(pid)
end

--- The exit status of a background command is not ours to wait for; these commands echo it.
function M.spawn_status(cmd, log, env)
    local p = io.popen(("env -u LD_PRELOAD %s sh -c %s >%s 2>&1 & echo $!"):format(env or "",
        q(cmd .. "; echo \"exit=$?\""), q(log)))
    local pid = tonumber(p:read("*l"))
    p:close()
    return pid
end

--- Wait until `path` holds `pattern` (a Lua pattern) or `seconds` pass; returns the text.
function M.wait_for(path, pattern, seconds)
    local deadline = M.now() + (seconds or 20)
    while M.now() < deadline do
        local s = util.read(path)
        if s and s:find(pattern) then return s end
        M.sleep(0.05)
    end
    return nil
end

--- Children of a pid.
function M.children(pid)
    local out = {}
    -- (without the sanitizer preload of an ASan run: pgrep under it can hang)
    local p = io.popen("env -u LD_PRELOAD pgrep -P " .. pid .. " 2>/dev/null")
    for line in p:lines() do out[#out + 1] = tonumber(line) end
    p:close()
    return out
end

--- Lines of a JSONL file, decoded; raises on a torn or invalid line.
function M.jsonl(path)
    local out = {}
    local f = io.open(path, "rb")
    if not f then return out end
    local text = f:read("*a")
    f:close()
    assert(text == "" or text:sub(-1) == "\n", path .. " ends without a newline (torn)")
    for line in text:gmatch("([^\n]*)\n") do
        local v, err = core.decode(line)
        assert(v, path .. ": torn or invalid line: " .. tostring(err))
        out[#out + 1] = v
    end
    return out
end

--- Stand-in request log: array of {t = seconds, mail = text}.
function M.standin_log(path)
    local out = {}
    for _, r in ipairs(M.jsonl(path)) do out[#out + 1] = { t = r[1], mail = r[2] } end
    return out
end

--- The first `n` mails of the support corpus into a temporary file; returns path and id by text.
function M.mailbox(n)
    local src, why = util.shared_path("corpora/support-emails/emails.jsonl", "support-emails corpus")
    if not src then return nil, why end
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    local by_text, ids, k = {}, {}, 0
    for line in io.lines(src) do
        k = k + 1
        if k > n then break end
        local v = core.decode(line)
        by_text[v.text] = v.id
        ids[#ids + 1] = v.id
        f:write(line, "\n")
    end
    f:close()
    return path, by_text, ids
end

local PG_BIN = os.getenv("JC_PG_BIN") or "/usr/lib/postgresql/15/bin"

--- Start a PostgreSQL server in a temporary folder on a free port. As root, the server runs as
-- `nobody` (runuser); otherwise as ourselves. Returns `{url = "postgresql://...", stop = fn}`
-- or nil and why (for `pending`).
function M.start_postgres()
    if not io.open(PG_BIN .. "/initdb", "rb") then return nil, "postgresql skipped: no " .. PG_BIN .. "/initdb" end
    local okd = pcall(require, "dbd.postgresql")
    if not okd then return nil, "postgresql skipped: lua-dbi-postgresql is not installed" end
    local uid = util.sh("env -u LD_PRELOAD id -u")
    local as = ""
    local user = util.sh("env -u LD_PRELOAD id -un"):gsub("%s+$", "")
    if uid:match("^0%s*$") then
        as, user = "runuser -u nobody -- ", "nobody"
    end
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("env -u LD_PRELOAD sh -c " .. q("mkdir -p " .. q(dir) .. " && chmod 700 " .. q(dir)))
    if as ~= "" then os.execute("env -u LD_PRELOAD chown nobody " .. q(dir)) end
    local s = assert(socket.bind("127.0.0.1", 0))
    local _, port = s:getsockname()
    s:close()
    local out, code = util.sh(("env -u LD_PRELOAD %s%s/initdb -D %s/data -A trust -U %s --no-sync -E UTF8 >%s/initdb.log")
        :format(as, PG_BIN, q(dir), q(user), q(dir)))
    if code ~= 0 then
        os.execute("rm -rf " .. q(dir))
        return nil, "postgresql skipped: initdb failed: " .. out:sub(1, 200)
    end
    out, code = util.sh(("env -u LD_PRELOAD %s%s/pg_ctl -D %s/data -l %s/server.log -w -t 30 -o %s start")
        :format(as, PG_BIN, q(dir), q(dir), q(("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off "
            .. "-c max_connections=50"):format(port, dir))))
    if code ~= 0 then
        os.execute("rm -rf " .. q(dir))
        return nil, "postgresql skipped: the server did not start: " .. out:sub(1, 200)
    end
    local pg = { url = ("postgresql://%s@127.0.0.1:%d/postgres"):format(user, port), dir = dir }
    function pg.stop()
        util.sh(("env -u LD_PRELOAD %s%s/pg_ctl -D %s/data -m immediate -w stop"):format(as, PG_BIN, q(dir)))
        os.execute("rm -rf " .. q(dir))
    end
    return pg
end

return M
