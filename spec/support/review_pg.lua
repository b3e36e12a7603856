-- A throw-away PostgreSQL server for the review desk's specs (not part of the library): Debian's
-- postgresql binaries, initdb into a temporary folder as an unprivileged user (the `postgres`
-- account when the specs run as root), listening on 127.0.0.1 on a free port, trust auth for the
-- one role `jc`. `start()` returns a handle or nil and why (the specs then say skipped).
local util = require "support.util"

local M = {}

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local function run(cmd) return util.sh("env -u LD_PRELOAD sh -c " .. q(cmd)) end

--- Start a server with one database `jobs`.
-- @treturn[1] table `{url = "postgresql://jc@127.0.0.1:PORT/jobs", dir, port, as}`
-- @return[2] nil
-- @treturn[2] string why it cannot run here
function M.start()
    local ok_driver = pcall(require, "dbd.postgresql")
    if not ok_driver then return nil, "PostgreSQL skipped: LuaDBI's PostgreSQL driver not installed (Debian: lua-dbi-postgresql)" end
    local bin = run("ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1"):match("(%S+)")
    if not bin then return nil, "PostgreSQL skipped: no /usr/lib/postgresql/*/bin (Debian: postgresql)" end
    local root = run("id -u"):match("^0%s") ~= nil
    local as = ""
    if root then
        local _, code = run("id postgres")
        if code ~= 0 then return nil, "PostgreSQL skipped: running as root and no postgres account to run it as" end
        as = "runuser -u postgres -- "
    end
    local dir = run("mktemp -d"):match("^(%S+)")
    if root then run("chown postgres " .. q(dir)) end
    local port = util.closed_port()
    local out, code = run(as .. bin .. "/initdb -D " .. q(dir .. "/data") .. " -A trust -U jc")
    if code ~= 0 then
        run("rm -rf " .. q(dir))
        return nil, "PostgreSQL skipped: initdb failed: " .. out:sub(1, 200)
    end
    out, code = run(as .. bin .. "/pg_ctl -w -t 30 -D " .. q(dir .. "/data") .. " -l " .. q(dir .. "/log") .. " -o "
        .. q("-p " .. port .. " -k " .. dir .. " -c listen_addresses=127.0.0.1 -c fsync=off") .. " start")
    if code ~= 0 then
        local log = util.read(dir .. "/log") or ""
        run("rm -rf " .. q(dir))
        return nil, "PostgreSQL skipped: the server did not start: " .. (out .. log):sub(1, 300)
    end
    local h = { dir = dir, port = port, as = as, bin = bin, url = "postgresql://jc@127.0.0.1:" .. port .. "/jobs" }
    out, code = run(bin .. "/createdb -h 127.0.0.1 -p " .. port .. " -U jc jobs")
    if code ~= 0 then
        M.stop(h)
        return nil, "PostgreSQL skipped: createdb failed: " .. out:sub(1, 200)
    end
    return h
end

--- Stop the server and remove its folder (fast shutdown, by its data folder's pid).
function M.stop(h)
    if not h then return end
    run(h.as .. h.bin .. "/pg_ctl -D " .. q(h.dir .. "/data") .. " -m fast -w -t 30 stop")
    run("rm -rf " .. q(h.dir))
end

--- Empty the database (every table of the job store goes).
function M.reset(h)
    -- (create: reset may run on a database that holds no job store yet)
    local store = assert(require("jsoncontract.jobs.store").open(h.url))
    assert(store:exec("DROP SCHEMA public CASCADE"))
    assert(store:exec("CREATE SCHEMA public"))
    store:close()
end

return M
