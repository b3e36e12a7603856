--- The review desk inside nginx (lua-nginx-module): reviewer authentication, security headers
-- and the bridge from `ngx` to `jsoncontract.review.desk`. Loaded by the nginx.conf that
-- `jsoncontract review` writes (see `jsoncontract.review.serve`): `init(config_path)` runs in
-- init_by_lua (the master reads the configuration and compiles the contract once),
-- `init_worker()` in init_worker_by_lua (a timer that stops nginx when the command that
-- started it is gone), `handle()` in content_by_lua. The store and the rules' context are
-- opened per worker on first use: a database connection never crosses a fork.
--
-- Reviewers: with an auth file (lines `name:secret`), a request is identified by HTTP Basic
-- auth (`name` / `secret`), by `Authorization: Bearer <secret>`, or by the session cookie that
-- `GET /login?token=<secret>` sets (HttpOnly, SameSite=Strict); anything else gets 401. Without
-- one (only allowed on a loopback address) the reviewer is the local user who started the desk.
--
-- Before any of that, and before any data is read: a request whose `Host` names none of the
-- desk's names (`jsoncontract.review.serve.allowed_hosts`) gets 421, a POST whose `Origin` (or,
-- without one, `Referer`) is not this desk's gets 403: a DNS-rebinding page neither reads nor
-- decides. A secret that fails (Basic, bearer or /login token; not a stale session cookie) is
-- logged at `warn` with the client address and, for Basic auth, the reviewer name when it is a
-- known one; never the secret. After 5 failures in a row from one client address (kept 1 hour)
-- that address is locked out for 1 s, doubling with each further failure up to 15 minutes: a
-- request carrying a secret then gets 429 with `Retry-After` without being checked.
--
-- SQLite and PostgreSQL calls through LuaSQL block the worker while they run; the desk is a
-- tool for a few people at once, its pages read one indexed page of rows.
-- @module jsoncontract.review.nginx
-- luacheck: globals ngx
local core = require "jsoncontract.core"

local type, pairs, ipairs, tostring, tonumber, pcall, error = type, pairs, ipairs, tostring, tonumber, pcall, error
local io_open = io.open

local _M = { _VERSION = core._VERSION }

local conf, users, contract_mod, desk
local COOKIE = "jc_review"
-- Failed logins per client address: declared by serve.nginx_conf.
local AUTH_DICT = "jc_review_auth"
local FREE_FAILURES, MAX_LOCK_S, FORGET_S = 5, 900, 3600

local SECURITY_HEADERS = {
    ["Content-Security-Policy"] = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        .. "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ["X-Content-Type-Options"] = "nosniff",
    ["X-Frame-Options"] = "DENY",
    ["Referrer-Policy"] = "same-origin",
    ["Cache-Control"] = "no-store",
}

local function read_file(path)
    local f, err = io_open(path, "rb")
    if not f then return nil, err end
    local s = f:read("*a")
    f:close()
    return s
end

--- Read an auth file: one reviewer per line, `name:secret`; blank lines and lines starting
-- with `#` are skipped.
-- @tparam string path
-- @treturn[1] table list of `{name =, secret =}` (at least one)
-- @return[2] nil
-- @treturn[2] string what is wrong (unreadable file, a malformed line, a secret under 12 bytes, no reviewer)
function _M.read_auth(path)
    local text, err = read_file(path)
    if not text then return nil, "cannot read the auth file: " .. tostring(err) end
    local list, n = {}, 0
    for line in (text .. "\n"):gmatch("([^\n]*)\n") do
        n = n + 1
        line = line:gsub("\r$", "")
        if line:match("%S") and not line:match("^%s*#") then
            local name, secret = line:match("^%s*([^:%s][^:]*):(.+)$")
            if not name then return nil, "auth file line " .. n .. ": expected name:secret" end
            name = name:gsub("%s+$", "")
            if #secret < 12 then return nil, "auth file line " .. n .. ": the secret must be at least 12 characters" end
            list[#list + 1] = { name = name, secret = secret }
        end
    end
    if #list == 0 then return nil, "the auth file names no reviewer" end
    return list
end

local same = require("jsoncontract.util").constant_time_equal

local function session_value(user)
    return user.name:gsub("[^%w%-%._]", "_") .. "." .. core.sha256(conf.secret .. "\0session\0" .. user.name
        .. "\0" .. user.secret)
end

--- Master-side setup: read the configuration JSON written by `serve`.
-- @tparam string config_path
-- @raise when the configuration, the auth file or the contract cannot be read
function _M.init(config_path)
    local text = assert(read_file(config_path))
    conf = assert(core.decode(text))
    if conf.auth_file and conf.auth_file ~= core.null then
        local err
        users, err = _M.read_auth(conf.auth_file)
        if not users then error(err, 0) end
    end
    -- (in the rules' sandbox, as every command loads it; its replay_context is host code)
    local path = conf.contract_file
    local mod, lerr = require("jsoncontract.contract.rules").load_file(path)
    if mod == nil and lerr then error("cannot load the contract " .. path .. ": " .. tostring(lerr), 0) end
    if type(mod) == "table" and type(mod.replay_context) == "function"
            and not (type(mod.contract) == "table" and mod.contract.trusted) then
        mod.replay_context = function(where) return dofile(path).replay_context(where) end
    end
    contract_mod = mod
end

--- Worker-side setup: stop nginx (QUIT to the master) once the process that started the desk
-- is gone, so a desk never outlives its command, even after a SIGKILL of the command.
function _M.init_worker()
    local ppid = tonumber(conf.parent_pid)
    if not ppid or ppid <= 1 or not read_file("/proc/1/stat") then return end
    local function check(premature)
        if premature then return end
        local f = io_open("/proc/" .. ppid .. "/stat", "rb")
        if f then f:close() return end
        local pid = read_file(conf.prefix .. "/nginx.pid")
        pid = pid and pid:match("%d+")
        if pid then os.execute("kill -QUIT " .. pid) end
    end
    ngx.timer.every(1, check)
end

-- The lock-out left for this client address in seconds, or nil.
local function locked(addr)
    local dict = ngx.shared[AUTH_DICT]
    local till = dict and dict:get("lock:" .. addr)
    if till and till > ngx.now() then return math.ceil(till - ngx.now()) end
    return nil
end

-- Count a failed secret from `addr`, lock the address out once it failed too often, log it.
local function failed_login(addr, how)
    local dict = ngx.shared[AUTH_DICT]
    local n = dict and dict:incr("fail:" .. addr, 1, 0, FORGET_S) or 0
    local wait
    if n >= FREE_FAILURES then
        wait = math.min(2 ^ (n - FREE_FAILURES), MAX_LOCK_S)
        dict:set("lock:" .. addr, ngx.now() + wait, wait)
    end
    local line = "review desk: failed login from " .. addr .. " (" .. how .. "); " .. n .. " in a row"
        .. (wait and (", locked out for " .. wait .. " s") or "")
    -- Logged from a timer: a log line written in the request would carry nginx's `request: "GET
    -- /login?token=..."` context, the secret tried.
    local ok = ngx.timer.at(0, function() ngx.log(ngx.WARN, line) end)
    if not ok then ngx.log(ngx.WARN, "review desk: failed login (not logged in full: no timer)") end
end

local function login_ok(addr)
    local dict = ngx.shared[AUTH_DICT]
    if dict then dict:delete("fail:" .. addr) end
end

-- The reviewer of this request, or nil and why (the response then is 401, or 429 when the
-- client's address is locked out).
local function reviewer()
    if not users then return conf.local_reviewer end
    local cookie = ngx.var["cookie_" .. COOKIE]
    if cookie then
        -- A session value is a hash under this start's key: guessing it is no login attempt, and a
        -- stale cookie from an earlier start is not counted against its owner.
        for _, u in ipairs(users) do if same(session_value(u), cookie) then return u.name end end
    end
    local h = ngx.var.http_authorization
    if not h then return nil end
    local b64 = h:match("^[Bb]asic%s+(%S+)")
    local token = h:match("^[Bb]earer%s+(%S+)")
    if not b64 and not token then return nil end
    local addr = ngx.var.remote_addr
    local wait = locked(addr)
    if wait then return nil, wait end
    local how
    if b64 then
        local pair = ngx.decode_base64(b64) or ""
        local name, secret = pair:match("^([^:]*):(.*)$")
        how = "basic auth, unknown name"
        for _, u in ipairs(users) do
            if u.name == name then
                if same(u.secret, secret) then
                    login_ok(addr)
                    return u.name
                end
                how = "basic auth as " .. u.name
            end
        end
    else
        for _, u in ipairs(users) do
            if same(u.secret, token) then
                login_ok(addr)
                return u.name
            end
        end
        how = "bearer token"
    end
    failed_login(addr, how)
    return nil
end

local function open_desk()
    if desk then return desk end
    local store_mod = require "jsoncontract.jobs.store"
    local st, err = store_mod.open(conf.store_url, { create = false })
    if not st then error("cannot open the job store: " .. tostring(err), 0) end
    local job
    job, err = st:job(conf.job_id)
    if not job then error(tostring(err), 0) end
    -- the rules' context as `jsoncontract review` checked it could be opened (jobs.definition)
    local definition = require "jsoncontract.jobs.definition"
    local def = definition.load(contract_mod)
    local context, needs
    if def then
        local dir = conf.context_dir ~= core.null and conf.context_dir or nil
        context = definition.reader_context(def, dir, conf.root)
        needs = def.context ~= false and #definition.rule_names(def.contract) > 0
    end
    desk = require("jsoncontract.review.desk").new {
        store = st, queries = require "jsoncontract.review.queries", job = job,
        contract = contract_mod.contract, context = context or nil, secret = conf.secret,
        context_missing = (needs and not context) or (type(contract_mod.replay_context) == "function"
            and not context) or false,
        exports_note = type(conf.exports_note) == "string" and conf.exports_note or nil,
    }
    return desk
end

local function send(status, headers, body)
    ngx.status = status
    for k, v in pairs(SECURITY_HEADERS) do ngx.header[k] = v end
    for k, v in pairs(headers or {}) do ngx.header[k] = v end
    if body and body ~= "" and ngx.req.get_method() ~= "HEAD" then ngx.print(body) end
    return ngx.exit(status)
end

-- Does the Host header name this desk? Its name (lower case, the port left aside) must be one
-- of conf.allowed_hosts; no Host at all (HTTP/1.0) is refused too.
local function host_ok()
    local host = ngx.var.http_host
    if type(host) ~= "string" then return false end
    host = host:lower()
    local name = host:match("^(%[[%x:]+%]):?%d*$") or host:match("^([^:%[%]]+):?%d*$")
    if not name then return false end
    for _, allowed in ipairs(conf.allowed_hosts) do
        if name == allowed then return true end
    end
    return false
end

-- Does an Origin (or, without one, a Referer) header name this desk (its scheme: https with
-- --tls, and the request's Host, already checked)? Absent both: yes (the CSRF token still holds).
local function same_origin()
    local own = (conf.tls and "https://" or "http://") .. tostring(ngx.var.http_host):lower()
    local origin = ngx.var.http_origin
    if origin then return origin:lower() == own end
    local ref = ngx.var.http_referer
    if ref then return ref:sub(1, #own + 1):lower() == own .. "/" end
    return true
end

--- The content handler of every location.
function _M.handle()
    local method = ngx.req.get_method()
    local path = ngx.var.uri
    local text = { ["Content-Type"] = "text/plain; charset=utf-8" }
    if not host_ok() then
        return send(421, text, "this desk does not answer to that Host name (see --allow-host)\n")
    end
    if method == "POST" and not same_origin() then
        return send(403, text, "refused: the request comes from another origin\n")
    end
    if path == "/login" and users then
        local token = ngx.req.get_uri_args().token
        local addr = ngx.var.remote_addr
        local wait = locked(addr)
        if wait then
            text["Retry-After"] = tostring(wait)
            return send(429, text, "too many failed logins from your address; try again in " .. wait .. " s\n")
        end
        for _, u in ipairs(users) do
            if type(token) == "string" and same(u.secret, token) then
                login_ok(addr)
                return send(303, { Location = "/", ["Set-Cookie"] = COOKIE .. "=" .. session_value(u)
                    .. "; Path=/; HttpOnly; SameSite=Strict" .. (conf.tls and "; Secure" or "") }, "")
            end
        end
        failed_login(addr, "login token")
        return send(401, text, "unknown token\n")
    end
    local who, wait = reviewer()
    if wait then
        text["Retry-After"] = tostring(wait)
        return send(429, text, "too many failed logins from your address; try again in " .. wait .. " s\n")
    end
    if not who then
        return send(401, { ["Content-Type"] = "text/plain; charset=utf-8",
            ["WWW-Authenticate"] = 'Basic realm="jsoncontract review", charset="UTF-8"' },
            "who are you? sign in with your reviewer name and secret, or open /login?token=<secret>\n")
    end
    local post
    if method == "POST" then
        ngx.req.read_body()
        local args, err = ngx.req.get_post_args(500)
        if not args then
            return send(400, { ["Content-Type"] = "text/plain" }, "bad form: " .. tostring(err) .. "\n")
        end
        post = args
    end
    local ok, d = pcall(open_desk)
    if not ok then
        ngx.log(ngx.ERR, "review desk: ", tostring(d))
        return send(500, { ["Content-Type"] = "text/plain; charset=utf-8" }, "the desk cannot start: " .. tostring(d)
            .. "\n")
    end
    local okh, res = pcall(d.handle, d, { method = method, path = path, args = ngx.req.get_uri_args(100),
        post = post, reviewer = who, origin_ok = same_origin() })
    if not okh then
        ngx.log(ngx.ERR, "review desk: ", tostring(res))
        return send(500, { ["Content-Type"] = "text/plain; charset=utf-8" }, "internal error (see the error log)\n")
    end
    return send(res.status, res.headers, res.body)
end

return _M
