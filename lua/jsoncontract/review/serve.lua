--- `jsoncontract review`: serve the review desk of a job through nginx (Debian's nginx with
-- lua-nginx-module). It checks everything first (the store, the job, the contract the job ran
-- with, the auth file, the address), then writes an nginx.conf and the desk's configuration
-- into a fresh temporary prefix folder, runs nginx in the foreground (`daemon off`) and waits.
-- SIGINT or SIGTERM stops nginx (fast shutdown), removes the prefix folder and exits 130 / 143;
-- should the command itself be killed, nginx notices within a second and stops (see
-- `jsoncontract.review.nginx.init_worker`).
-- @module jsoncontract.review.serve
local core = require "jsoncontract.core"
local compat = require "jsoncontract.compat"
local lfs = require "lfs"

local type, tostring, tonumber, ipairs, rawget = type, tostring, tonumber, ipairs, rawget
local format, concat = string.format, table.concat

local _M = { _VERSION = core._VERSION }

--- The default address: loopback only.
_M.DEFAULT_LISTEN = "127.0.0.1:8470"
local MODULES = "/usr/lib/nginx/modules"
-- Job store files `jsoncontract triage` may leave in an output folder, in the order tried.
local STORE_FILES = { "job.sqlite", "jobs.sqlite", "store.sqlite", "job.db" }

local q = require("jsoncontract.util").shell_quote

local function exists(path)
    return lfs.attributes(path, "mode") ~= nil
end

local function is_dir(path)
    return lfs.attributes(path, "mode") == "directory"
end

local function sh(cmd)
    local p = io.popen(cmd .. " 2>&1; echo \"exit=$?\"")
    local out = p:read("*a")
    p:close()
    local code = tonumber(out:match("exit=(%d+)%s*$"))
    return (out:gsub("exit=%d+%s*$", "")), code
end

local sleep = compat.block

--- Parse `--listen`: `HOST:PORT`, `PORT`, or `[V6]:PORT`.
-- @tparam string s
-- @treturn[1] string host
-- @treturn[1] integer port
-- @return[2] nil
-- @treturn[2] string message
function _M.parse_listen(s)
    if type(s) ~= "string" then return nil, "--listen needs HOST:PORT" end
    local host, port = s:match("^%[([%x:]+)%]:(%d+)$")
    if not host then host, port = s:match("^([%w%.%-]+):(%d+)$") end
    if not host and s:match("^%d+$") then host, port = "127.0.0.1", s end
    port = tonumber(port)
    if not host or not port or port < 1 or port > 65535 then
        return nil, "--listen: expected HOST:PORT (e.g. 127.0.0.1:8470), got " .. s
    end
    return host, port
end

--- Is the address loopback-only (127.0.0.0/8, ::1, localhost)?
-- @tparam string host
-- @treturn boolean
function _M.is_loopback(host)
    return host == "localhost" or host == "::1" or host:match("^127%.%d+%.%d+%.%d+$") ~= nil
end

--- The host names the desk answers to (the `Host` header's name, lower case, an IPv6 address in
-- brackets; the port is not compared, a TLS proxy in front may change it). A DNS-rebinding page
-- reaches the desk under its own name, which is not among them.
-- @tparam string host the listen address (from `parse_listen`)
-- @tparam table|nil names `--allow-host` values: DNS names, IPv4 addresses or `[V6]` addresses
-- @treturn[1] table list of names: the listen address unless it is a wildcard (0.0.0.0, ::),
--   `localhost`, `127.0.0.1` and `[::1]` for a loopback address, then `names`
-- @return[2] nil
-- @treturn[2] string message (a malformed name; a wildcard address without any name)
function _M.allowed_hosts(host, names)
    local list, seen = {}, {}
    local function add(name)
        name = name:lower()
        if not seen[name] then
            seen[name] = true
            list[#list + 1] = name
        end
    end
    local wildcard = host == "0.0.0.0" or host == "::" or host:match("^[0:]+$") ~= nil
    if not wildcard then add(host:find(":", 1, true) and ("[" .. host .. "]") or host) end
    if _M.is_loopback(host) then
        add("localhost")
        add("127.0.0.1")
        add("[::1]")
    end
    for _, name in ipairs(names or {}) do
        local v6 = type(name) == "string" and name:match("^%[([%x:]+)%]$")
        if type(name) ~= "string" or not (v6 or name:match("^[%w][%w%.%-]*$")) then
            return nil, "--allow-host: expected a host name or address without port or scheme (e.g. desk.example.com), "
                .. "got " .. tostring(name)
        end
        add(name)
    end
    if wildcard and #list == 0 then
        return nil, "listening on " .. host .. " answers any address: name the host reviewers reach the desk by "
            .. "with --allow-host NAME (repeatable)"
    end
    return list
end

--- Where the job store of `target` is: a folder (its store file), a store file, or a URL.
-- @tparam string target
-- @treturn[1] string store URL
-- @treturn[1] string|nil the job folder (for the rules' context), nil for a URL
-- @return[2] nil
-- @treturn[2] string message
function _M.locate(target)
    if target:match("^postgres[a-z]*://") then return target, nil end
    local path = target:match("^sqlite:(.+)$") or target
    if is_dir(path) then
        for _, name in ipairs(STORE_FILES) do
            if exists(path .. "/" .. name) then return path .. "/" .. name, path end
        end
        return nil, path .. " holds no job store (looked for " .. concat(STORE_FILES, ", ") .. ")"
    end
    if exists(path) then return path, path:match("^(.*)/[^/]*$") or "." end
    return nil, "no such folder or store file: " .. path
end

-- The contract file for a job: --contract, else the job module the job ran (its path is in the
-- job's options), else examples/<contract_name>.lua (jobs made before job modules).
local function contract_file(o, job, root)
    if o.contract then return o.contract end
    local jo = core.decode(job.options_json or "") or {}
    if type(jo) == "table" and type(jo.job) == "string" and exists(jo.job) then return jo.job end
    local name = job.contract_name
    -- The store is data: a name never becomes a path outside examples/.
    if type(name) ~= "string" or not name:match("^[%w_%-]+$") then
        return nil, "the job names the contract " .. tostring(name) .. ", which is not an example name; "
            .. "pass --contract FILE"
    end
    local file = root .. "/examples/" .. name .. ".lua"
    if not exists(file) then return nil, "no contract file " .. file .. "; pass --contract FILE" end
    return file
end

local function abs(path)
    if path:sub(1, 1) == "/" then return path end
    return os.getenv("PWD") .. "/" .. path
end

-- package.searchpath (5.2+, LuaJIT), written out for PUC Lua 5.1.
local function search(name, path)
    local searchpath = rawget(package, "searchpath")
    if searchpath then return (searchpath(name, path)) end
    local file = name:gsub("%.", "/")
    for template in path:gmatch("[^;]+") do
        local candidate = template:gsub("%?", file)
        if exists(candidate) then return candidate end
    end
    return nil
end

-- Where jsoncontract's Lua files were found: this checkout's lua/, or an installed tree's.
local function lua_dir(root)
    local desk = search("jsoncontract.review.desk", package.path)
    local dir = desk and desk:match("^(.*)/jsoncontract/review/desk%.lua$") or (root .. "/lua")
    return abs(dir)
end

-- The `package.cpath` entry under which nginx's LuaJIT finds a core built for it (Lua 5.1's
-- ABI), or nil and what to do. In order: --cpath or JC_NGINX_CPATH; a checkout's LuaJIT build;
-- the core this process loaded, when it runs on LuaJIT or Lua 5.1; an installed tree's
-- lib/lua/5.1 (the rock installed for LuaJIT too); LuaJIT's default folders.
local function core_cpath(root, o)
    local given = o.cpath or os.getenv("JC_NGINX_CPATH")
    if given then return given end
    local dir = abs(root):gsub("/%.$", "")
    if exists(dir .. "/csrc/core.c") then
        if exists(dir .. "/build/luajit/jsoncontract/core.so") then return dir .. "/build/luajit/?.so" end
        return nil, "the desk runs in nginx's LuaJIT, which needs the LuaJIT build of the core: run `make LUA=luajit` "
            .. "in " .. dir .. " (or set JC_NGINX_CPATH to where a LuaJIT core.so is)"
    end
    if rawget(_G, "jit") or _VERSION == "Lua 5.1" then
        local loaded = search("jsoncontract.core", package.cpath)
        if loaded then return (abs(loaded):gsub("jsoncontract/core%.so$", "?.so")) end
    end
    local looked, candidates = {}, { "/usr/local/lib/lua/5.1", "/usr/lib/x86_64-linux-gnu/lua/5.1", "/usr/lib/lua/5.1" }
    local tree = lua_dir(root):match("^(.*)/share/lua/[^/]+$")
    if tree then table.insert(candidates, 1, tree .. "/lib/lua/5.1") end
    for _, lib in ipairs(candidates) do
        if exists(lib .. "/jsoncontract/core.so") then return lib .. "/?.so" end
        looked[#looked + 1] = lib
    end
    return nil, "the desk runs in nginx's LuaJIT, which needs a build of the core for LuaJIT (Lua 5.1's ABI), "
        .. "and there is none in " .. concat(looked, ", ") .. ": install the rock for LuaJIT too (README.md, "
        .. "Install: LuaJIT), into the same tree, or set JC_NGINX_CPATH to the ?.so pattern of a LuaJIT core.so "
        .. "(e.g. /usr/local/lib/lua/5.1/?.so)"
end

-- The module search paths nginx's LuaJIT needs: jsoncontract's Lua files where they were found,
-- and the core built for LuaJIT (`core_cpath`).
local function lua_paths(root, o)
    local luadir = lua_dir(root)
    local cpath = core_cpath(root, o)
    return luadir .. "/?.lua;" .. luadir .. "/?/init.lua;;", (cpath and (cpath .. ";") or "") .. ";"
end

--- Why nginx's LuaJIT would not find the core, or nil (see `core_cpath`): without the check,
-- nginx fails at start with a "module 'jsoncontract.core' not found" traceback.
-- @tparam string root the repository or install root
-- @tparam table o `cpath` (as for `prepare`)
-- @treturn string|nil
function _M.missing_core(root, o)
    local cpath, why = core_cpath(root, o)
    if cpath then return nil end
    return why
end

--- Why nginx with the Lua module cannot run here, or nil.
-- @treturn string|nil
function _M.missing()
    local _, code = sh("command -v nginx >/dev/null")
    if code ~= 0 then return "nginx not found on PATH (Debian: apt-get install nginx libnginx-mod-http-lua)" end
    for _, m in ipairs { "ndk_http_module.so", "ngx_http_lua_module.so" } do
        if not exists(MODULES .. "/" .. m) then
            return "nginx lua module not found at " .. MODULES .. "/" .. m .. " (Debian: libnginx-mod-http-lua)"
        end
    end
    return nil
end

--- The nginx.conf of a desk.
-- @tparam table c `prefix` (folder), `host`, `port`, `lua_path`, `lua_cpath`, `config` (path of
--   the desk's configuration JSON), `user` (string or nil: "root" when running as root),
--   `trusted_proxies` (nil or a list of nginx realip lines: the client address of a request from
--   such a proxy is the last address of its `X-Forwarded-For`)
-- @treturn string
function _M.nginx_conf(c)
    local listen = c.host:find(":", 1, true) and ("[" .. c.host .. "]:" .. c.port) or (c.host .. ":" .. c.port)
    return concat({
        "# written by jsoncontract review; removed when the desk stops",
        "daemon off;", "master_process on;", "worker_processes 1;",
        c.user and ("user " .. c.user .. ";") or "",
        "pid " .. c.prefix .. "/nginx.pid;",
        "error_log stderr warn;",
        "load_module " .. MODULES .. "/ndk_http_module.so;",
        "load_module " .. MODULES .. "/ngx_http_lua_module.so;",
        "events { worker_connections 256; }",
        "http {",
        "  access_log off;",
        "  server_tokens off;",
        "  client_body_temp_path " .. c.prefix .. "/body; proxy_temp_path " .. c.prefix .. "/proxy;",
        "  fastcgi_temp_path " .. c.prefix .. "/fcgi; uwsgi_temp_path " .. c.prefix .. "/uwsgi;",
        "  scgi_temp_path " .. c.prefix .. "/scgi;",
        "  client_max_body_size 1m; client_body_buffer_size 1m;",
        "  merge_slashes off;",
        -- failed logins per client address (jsoncontract.review.nginx)
        "  lua_shared_dict jc_review_auth 1m;",
        c.trusted_proxies and concat(c.trusted_proxies, "") or "",
        format("  lua_package_path %q;", c.lua_path),
        format("  lua_package_cpath %q;", c.lua_cpath),
        format("  init_by_lua_block { require('jsoncontract.review.nginx').init(%q) }", c.config),
        "  init_worker_by_lua_block { require('jsoncontract.review.nginx').init_worker() }",
        "  server {",
        "    listen " .. listen .. ";",
        "    location / { content_by_lua_block { require('jsoncontract.review.nginx').handle() } }",
        "  }",
        "}", "" }, "\n")
end

--- Prepare a desk: check everything and write its prefix folder; nothing runs yet.
-- @tparam table o `target` (folder, store file or URL), `listen` (string), `auth` (file), `contract`
--   (file), `job` (job id), `context` (folder the contract's `replay_context` reads the rules' data
--   from; default the job folder), `cpath` (LuaJIT cpath for the core), `local_reviewer` (string),
--   `allow_host` (list of names the desk also answers to, see `allowed_hosts`), `tls` (true: the
--   desk is reached over HTTPS through a TLS proxy: the session cookie is `Secure` and a POST's
--   Origin must be `https://`), `trusted_proxy` (list of addresses or CIDRs whose
--   `X-Forwarded-For` names the client, for throttling failed logins per client)
-- @tparam table env `{root = repository or install root}`
-- @treturn[1] table desk `{prefix, conf_path, url, job, open, decided}`
-- @return[2] nil
-- @treturn[2] string message
function _M.prepare(o, env)
    local root = env.root or "."
    if type(o.target) ~= "string" then return nil, "review needs a job folder or a store URL" end
    local host, port = _M.parse_listen(o.listen or _M.DEFAULT_LISTEN)
    if not host then return nil, port end
    local proxies
    for _, a in ipairs(o.trusted_proxy or {}) do
        if type(a) ~= "string" or not (a:match("^[%d%.]+/?%d*$") or a:match("^[%x:]+/?%d*$")) then
            return nil, "--trusted-proxy: expected an IP address or CIDR (e.g. 10.0.0.2 or 10.0.0.0/24), got "
                .. tostring(a)
        end
        proxies = proxies or { "  real_ip_header X-Forwarded-For;" }
        proxies[#proxies + 1] = " set_real_ip_from " .. a .. ";"
    end
    local users
    if o.auth then
        local err
        users, err = require("jsoncontract.review.nginx").read_auth(o.auth)
        if not users then return nil, err end
    elseif not _M.is_loopback(host) then
        return nil, "refusing to serve on " .. host .. " without reviewers: pass --auth FILE (lines name:secret); "
            .. "without one the desk listens on 127.0.0.1 only"
    end
    local hosts, herr = _M.allowed_hosts(host, o.allow_host)
    if not hosts then return nil, herr end
    local why = _M.missing() or _M.missing_core(root, o)
    if why then return nil, why end
    local url, dir = _M.locate(o.target)
    if not url then return nil, dir end
    local store_mod = require "jsoncontract.jobs.store"
    local st, err = store_mod.open(url, { create = false })
    if not st then return nil, tostring(err.message or err) end
    local job
    if o.job then job, err = st:job(o.job) else job, err = st:latest_job() end
    if not job then st:close() return nil, tostring(err.message or err) end
    local counts = require("jsoncontract.review.queries").queue_counts(st, job.id)
    local read_only = st.read_only
    st:close()
    if not counts then return nil, "cannot read the job's queue" end
    local file
    file, err = contract_file(o, job, root)
    if not file then return nil, err end
    -- Fail closed: the desk checks a person's value with the rules, so they need their context.
    local definition = require "jsoncontract.jobs.definition"
    local def, derr = definition.load(file)
    if not def then return nil, derr end
    local ctx, close = definition.reader_context(def, (o.context and abs(o.context)) or (dir and abs(dir)), abs(root))
    if ctx == nil then return nil, close end
    close()
    local c = def.contract
    if c.name ~= job.contract_name or c.version ~= job.contract_version
        or (job.schema_hash and job.schema_hash ~= c.schema_hash) then
        return nil, format("the job ran contract %s %s (schema %s) but %s is %s %s (schema %s); pass --contract "
            .. "with the contract the job ran", tostring(job.contract_name), tostring(job.contract_version),
            tostring(job.schema_hash):sub(1, 12), file, c.name, c.version, c.schema_hash:sub(1, 12))
    end

    local out, code = sh("mktemp -d -t jsoncontract-review.XXXXXX")
    local prefix = code == 0 and out:match("^(%S+)")
    if not prefix then return nil, "cannot make a temporary folder: " .. out end
    sh("chmod 700 " .. q(prefix))
    -- The key of the CSRF tokens and session cookies: new for every start of the desk.
    local noise = ""
    local rnd = io.open("/dev/urandom", "rb")
    if rnd then
        noise = rnd:read(32) or ""
        rnd:close()
    end
    local secret = core.sha256(noise .. tostring(os.time()) .. tostring(os.clock()) .. prefix .. tostring({}))
    local pid = core.process_ids and core.process_ids() or nil
    local config = {
        store_url = url:match("^postgres") and url or abs(url), job_id = job.id, contract_file = abs(file),
        context_dir = (o.context and abs(o.context)) or (dir and abs(dir)) or nil, root = abs(root),
        secret = secret, auth_file = o.auth and abs(o.auth),
        local_reviewer = o.local_reviewer or ((os.getenv("USER") or "local") .. "@localhost"),
        prefix = prefix, parent_pid = pid, allowed_hosts = hosts, tls = o.tls and true or false,
        -- what the page says about the exports (the desk writes them when it stops)
        exports_note = read_only and ("The job store is on storage this desk cannot write: it shows the queue, "
                .. "and a decision cannot be recorded.")
            or (not url:match("^postgres") and dir)
            and ("Decisions are in the job store now and reach " .. dir .. "'s accepted.jsonl, review.jsonl, "
                .. "evidence.jsonl and summary.json when the desk stops.")
            or "Decisions are in the job store now; `jsoncontract export --store URL --out DIR` writes the exports.",
    }
    local f = io.open(prefix .. "/desk.json", "w")
    if not f then return nil, "cannot write " .. prefix .. "/desk.json" end
    f:write(core.encode(config))
    f:close()
    local lua_path, lua_cpath = lua_paths(root, o)
    local user = sh("id -u"):match("^0%s") and "root" or nil
    local conf = _M.nginx_conf { prefix = prefix, host = host, port = port, lua_path = lua_path,
        lua_cpath = lua_cpath, config = prefix .. "/desk.json", user = user, trusted_proxies = proxies }
    f = io.open(prefix .. "/nginx.conf", "w")
    f:write(conf)
    f:close()
    local shown = host:find(":", 1, true) and ("[" .. host .. "]") or host
    return { prefix = prefix, conf_path = prefix .. "/nginx.conf", url = "http://" .. shown .. ":" .. port .. "/",
        job = job, open = counts.open, decided = counts.decided, auth = users ~= nil, hosts = hosts,
        clear = not o.tls and not _M.is_loopback(host),
        store_url = not url:match("^postgres") and not read_only and url or nil, dir = dir }
end

local function alive(pid)
    if exists("/proc/1/stat") then return exists("/proc/" .. pid .. "/stat") end
    local _, code = sh("kill -0 " .. pid)
    return code == 0
end

--- Run the review command: prepare, start nginx in the foreground, wait for SIGINT/SIGTERM.
-- @tparam table o as for `prepare`
-- @tparam table env `{root =, stdout =, stderr =}` (the streams default to io's)
-- @treturn integer exit status (130 after SIGINT, 143 after SIGTERM, 1 when nginx failed)
function _M.run(o, env)
    local stdout, stderr = env.stdout or io.stdout, env.stderr or io.stderr
    local d, err = _M.prepare(o, env)
    if not d then
        stderr:write("jsoncontract: ", err, "\n")
        return 1
    end
    local catching = core.signal_catch and core.signal_catch(true)
    -- nginx stays in the foreground of its own shell line (daemon off); its errors go to our
    -- stderr; its pid file says whom to stop.
    -- (LUA_PATH/LUA_CPATH name this interpreter's modules, e.g. Lua 5.4's after `luarocks path`;
    -- nginx's LuaJIT would read them for the ";;" of its own paths and load 5.4 drivers)
    os.execute(format("env -u LUA_PATH -u LUA_CPATH nginx -p %s -c %s -e stderr </dev/null &", q(d.prefix),
        q(d.conf_path)))
    local pid
    for _ = 1, 100 do
        local text = io.open(d.prefix .. "/nginx.pid", "rb")
        if text then
            pid = text:read("*a"):match("%d+")
            text:close()
            if pid then break end
        end
        sleep(0.05)
    end
    if not pid then
        stderr:write("jsoncontract: nginx did not start (see the messages above)\n")
        sh("rm -rf " .. q(d.prefix))
        if catching then core.signal_catch(false) end
        return 1
    end
    stdout:write(format("review desk for job %s (contract %s %s): %d to review, %d decided\n%s%s\n"
        .. "nginx %s, files in %s (removed when it stops); Ctrl-C stops it.\n", d.job.id,
        tostring(d.job.contract_name), tostring(d.job.contract_version), d.open, d.decided, d.url,
        d.auth and " (reviewers from the auth file)" or "", pid, d.prefix))
    stdout:write("answers to Host: " .. concat(d.hosts, ", ") .. "\n")
    if d.clear then
        -- Not refused: a network the operator trusts may be fine; docs/jobs.md shows TLS in front.
        stderr:write("jsoncontract: warning: serving beyond loopback without --tls: reviewers' secrets and the "
            .. "session cookie cross the network in clear; put a TLS proxy in front and pass --tls\n")
    end
    if stdout.flush then stdout:flush() end
    local status
    while true do
        local sig = catching and core.signal_take()
        if sig then
            status = sig == "SIGINT" and 130 or 143
            break
        end
        if not alive(pid) then
            stderr:write("jsoncontract: nginx stopped\n")
            status = 1
            break
        end
        sleep(0.2)
    end
    if alive(pid) then
        sh("kill -TERM " .. pid)
        for _ = 1, 100 do
            if not alive(pid) then break end
            sleep(0.05)
        end
        if alive(pid) then sh("kill -KILL " .. pid) end
    end
    sh("rm -rf " .. q(d.prefix))
    if catching then core.signal_catch(false) end
    if status ~= 1 then stdout:write("review desk stopped\n") end
    if d.store_url and d.dir then
        -- The decisions reach the folder's exports now, through the one writer `export` uses.
        local code = require("jsoncontract.cli.job_commands").export({ store = d.store_url, out = d.dir,
            job = d.job.id }, { root = env.root, stdout = stdout, stderr = stderr })
        if code ~= 0 then
            stderr:write("jsoncontract: the decisions are in the job store; `jsoncontract export " .. d.dir
                .. "` writes them once the folder can be written\n")
        end
    end
    return status
end

return _M
