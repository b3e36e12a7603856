--- Per-worker cache of the gateway's contracts, keyed by name + version + schema hash.
--
-- A contract is given by name as a compiled contract (`jc.contract{...}`), a definition table
-- (compiled on first use), or the path of a Lua file that returns either, or a module with a
-- `contract` field (as `examples/*.lua` do). Each worker compiles a contract once, on first use
-- (or in the master when the gateway is configured in `init_by_lua`, then every worker inherits
-- it). A file is looked at again at most every `check_ms`: when its text changed, it is loaded
-- and, when its key `name@version#schema_hash` differs from the cached one, replaces it for the
-- next request; a changed file under the same key keeps the compiled contract (and logs once),
-- so what the evidence names is what ran: bump the version. `nginx -s reload` (HUP) starts
-- workers with empty caches.
-- @module jsoncontract.nginx.contracts
-- luacheck: read globals ngx
local jc = require "jsoncontract"
local contract = require "jsoncontract.contract"
local rules = require "jsoncontract.contract.rules"

local type, pairs, error, tostring, setmetatable, pcall = type, pairs, error, tostring, setmetatable, pcall
local io_open, format = io.open, string.format

local _M = { _VERSION = require("jsoncontract.core")._VERSION }
local mt = { __index = _M }

local has_socket, socket = pcall(require, "socket")

local function now_ms()
    if type(ngx) == "table" then return ngx.now() * 1000 end
    if has_socket then return socket.gettime() * 1000 end
    return os.time() * 1000
end

--- The cache key of a contract.
-- @tparam table c a contract
-- @treturn string `name@version#schema_hash`
function _M.key(c)
    return c.name .. "@" .. c.version .. "#" .. c.schema_hash
end

-- A contract from what a file or a table gave; or nil, message.
local function to_contract(v, where)
    if contract.is_contract(v) then return v end
    if type(v) == "table" and contract.is_contract(v.contract) then return v.contract end
    if type(v) == "table" and v.schema ~= nil and v.name ~= nil then
        local ok, c = pcall(jc.contract, v)
        if ok then return c end
        return nil, format("%s: %s", where, tostring(c))
    end
    return nil, where .. " gave no contract (a contract, a definition table, or a table with a 'contract' field)"
end

local function read(path)
    local f, msg = io_open(path, "rb")
    if not f then return nil, msg end
    local text, rerr = f:read("*a")
    f:close()
    if not text then return nil, path .. ": " .. tostring(rerr) end
    return text
end

-- Load a contract file; returns contract, text or nil, message.
local function load_file(path)
    local text, msg = read(path)
    if not text then return nil, msg end
    -- (in the rules' sandbox: the file's rules, closures too, cannot reach the worker)
    local v, lerr = rules.load_file(path)
    if v == nil and lerr then return nil, lerr end
    local c, cerr = to_contract(v, path)
    if not c then return nil, cerr end
    return c, text
end

--- A cache for the named sources.
-- @tparam table sources `{ [name] = contract | definition table | path string }`
-- @tparam[opt] table opts `check_ms` (integer >= 0, default 2000: how often a file is looked at
--   again; 0: never, only HUP reloads)
-- @treturn table cache
-- @raise on a source of another type or a bad option
function _M.new(sources, opts)
    if type(sources) ~= "table" then error("contracts: sources must be a table { name = source }", 2) end
    opts = opts or {}
    local check_ms = opts.check_ms or 2000
    if type(check_ms) ~= "number" or check_ms < 0 then error("contracts: check_ms must be a number >= 0", 2) end
    local self = setmetatable({ sources = {}, entries = {}, check_ms = check_ms, loads = 0 }, mt)
    for name, src in pairs(sources) do
        if type(name) ~= "string" then error("contracts: names must be strings", 2) end
        if type(src) ~= "string" and type(src) ~= "table" then
            error("contracts: '" .. name .. "' must be a contract, a definition table or a file path", 2)
        end
        self.sources[name] = src
    end
    return self
end

--- Load every contract now (call in `init_by_lua` so workers inherit the compiled contracts).
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] string what failed
function _M.preload(self)
    for name in pairs(self.sources) do
        local c, err = self:get(name)
        if not c then return nil, err end
    end
    return true
end

--- The contract for `name`, compiled once per worker (and again after a version bump).
-- @tparam string name
-- @treturn[1] table contract
-- @treturn[1] string its key `name@version#schema_hash`
-- @return[2] nil
-- @treturn[2] string why (unknown name, unreadable file, not a contract); technical, for the log
function _M.get(self, name)
    local e = self.entries[name]
    local src = self.sources[name]
    if src == nil then return nil, "no contract named '" .. tostring(name) .. "'" end
    if e then
        if type(src) ~= "string" or self.check_ms == 0 then return e.contract, e.key end
        local t = now_ms()
        if t - e.checked < self.check_ms then return e.contract, e.key end
        e.checked = t
        local text, rerr = read(src)
        if not text then
            -- Keep serving the compiled contract, but say why edits are not taken up: often the
            -- master (root) compiled it and the workers' user may not read the file.
            if e.read_error ~= rerr then
                e.read_error = rerr
                if type(ngx) == "table" then
                    ngx.log(ngx.ERR, "jsoncontract: cannot read contract file ", src, " as ",
                        require("jsoncontract.nginx.evidence").whoami(), ": ", rerr, "; keeping ", e.key,
                        ", edits to the file are not taken up until the worker's user may read it")
                end
            end
            return e.contract, e.key
        end
        e.read_error = nil
        if text == e.text then return e.contract, e.key end
        local c, ctext = load_file(src)
        if not c then
            -- A broken edit must not take the gateway down: keep serving the compiled one.
            if type(ngx) == "table" then
                ngx.log(ngx.ERR, "jsoncontract: keeping contract ", e.key, ", reload failed: ", ctext)
            end
            e.text = text
            return e.contract, e.key
        end
        self.loads = self.loads + 1
        local key = _M.key(c)
        e.text = ctext
        if key == e.key then
            if type(ngx) == "table" then
                ngx.log(ngx.WARN, "jsoncontract: ", src, " changed but ", key,
                    " did not; keeping the compiled contract (bump the version)")
            end
            return e.contract, e.key
        end
        e.contract, e.key = c, key
        return c, key
    end
    local c, text
    if type(src) == "string" then
        c, text = load_file(src)
    else
        c, text = to_contract(src, "contract '" .. name .. "'")
        if c then text = nil end
    end
    if not c then return nil, text end
    self.loads = self.loads + 1
    e = { contract = c, key = _M.key(c), text = text, checked = now_ms() }
    self.entries[name] = e
    return e.contract, e.key
end

return _M
