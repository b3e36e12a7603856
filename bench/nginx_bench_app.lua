-- The nginx side of bench/nginx_bench.lua (not part of the library): the 1 KB support-ticket
-- reply's contract (bench/ticket_1k.lua), compiled once per worker, and one handler per
-- location. Every handler reads the POSTed reply (the body, in memory) and answers "ok" after
-- its work, so the locations differ only by that work:
--   body        reads the body, nothing else (the baseline)
--   check_json  contract:check_json (the gateway's path: format and schema gates, no Lua value)
--   check       contract:check (the Lua value built, as a handler wants it)
--   cjson       lua-cjson's decode alone, nothing validated: the floor of any location that
--               builds the Lua value (what `check ≥ 0.85×` asks for is measured against it)
--   api7        cjson.decode, then api7/jsonschema's validator (what APISIX and Kong plugins do);
--               api7/jsonschema is not packaged: its folder comes from JC_API7_JSONSCHEMA_PATH
--               (a lua_package_path fragment, with neturl's), else the location answers 501
-- luacheck: globals ngx
local jc = require "jsoncontract"
local ticket = require "ticket_1k"

local M = {}

M.TEXT, M.schema = ticket.TEXT, ticket.schema
M.contract = jc.contract {
    name = "ticket_1k", version = "1.0.0", schema = M.schema,
    instructions = "Triage the customer's mail.",
}
assert(M.contract:check(M.TEXT), "the bench reply must pass its contract")

-- api7/jsonschema with lua-cjson, when JC_API7_JSONSCHEMA_PATH says where it is.
local api7_validator, api7_missing
do
    local where = os.getenv("JC_API7_JSONSCHEMA_PATH")
    if not where or where == "" then
        api7_missing = "JC_API7_JSONSCHEMA_PATH is not set"
    else
        package.path = where .. ";" .. package.path
        local ok, jsonschema = pcall(require, "jsonschema")
        local ok_cjson, cjson = pcall(require, "cjson")
        if not ok then
            api7_missing = "require 'jsonschema' failed: " .. tostring(jsonschema)
        elseif not ok_cjson then
            api7_missing = "lua-cjson not found: " .. tostring(cjson)
        else
            local decode = cjson.decode
            local validate = jsonschema.generate_validator(M.schema)
            assert(validate(decode(M.TEXT)), "api7/jsonschema must accept the bench reply")
            api7_validator = function(text) return validate(decode(text)) end
        end
    end
end
M.api7_missing = api7_missing

-- lua-cjson alone (a Debian package; the location answers 501 without it).
local cjson_decode
do
    local ok, cjson = pcall(require, "cjson")
    if ok then
        cjson_decode = cjson.decode
        assert(type(cjson_decode(M.TEXT)) == "table", "lua-cjson must decode the bench reply")
    end
end

local contract = M.contract
local read_body, get_body_data, say, exit

-- The POSTed reply, or nil when it is not in memory (the location then answers 500).
local function body()
    read_body()
    return get_body_data()
end

local function fail(why)
    ngx.status = 500
    say(why)
    return exit(500)
end

--- POST /body: read the reply, answer "ok".
function M.body()
    local text = body()
    if not text then return fail("no body in memory") end
    say("ok")
end

--- POST /check_json: contract:check_json on the reply, answer "ok".
function M.check_json()
    local text = body()
    if not text then return fail("no body in memory") end
    local json, err = contract:check_json(text)
    if not json then return fail(tostring(err)) end
    say("ok")
end

--- POST /check: contract:check on the reply (the Lua value built), answer "ok".
function M.check()
    local text = body()
    if not text then return fail("no body in memory") end
    local value, err = contract:check(text)
    if not value then return fail(tostring(err)) end
    say("ok")
end

--- POST /cjson: lua-cjson's decode of the reply (the Lua value, nothing validated), answer
-- "ok"; 501 when lua-cjson is not installed.
function M.cjson()
    if not cjson_decode then
        ngx.status = 501
        say("lua-cjson not found")
        return exit(501)
    end
    local text = body()
    if not text then return fail("no body in memory") end
    if type(cjson_decode(text)) ~= "table" then return fail("not an object") end
    say("ok")
end

--- POST /api7: cjson.decode and api7/jsonschema's validator on the reply, answer "ok";
-- 501 and why when api7/jsonschema is not found.
function M.api7()
    if not api7_validator then
        ngx.status = 501
        say(api7_missing)
        return exit(501)
    end
    local text = body()
    if not text then return fail("no body in memory") end
    local ok, err = api7_validator(text)
    if not ok then return fail(tostring(err)) end
    say("ok")
end

--- GET /ffi_status: which path validator:check_json takes in this worker: "ffi" or
-- "C API (<why>)".
function M.ffi_status()
    local jffi = require "jsoncontract.ffi"
    ngx.say(jffi.available and "ffi" or ("C API (" .. tostring(jffi.reason) .. ")"))
end

if ngx then
    read_body, get_body_data, say, exit = ngx.req.read_body, ngx.req.get_body_data, ngx.say, ngx.exit
end

return M
