-- The nginx side of bench/nginx_bench.lua (not part of the library): a 1 KB model reply and
-- its contract, compiled once in init_by_lua, and the handler that checks that reply.
-- luacheck: globals ngx
local jc = require "jsoncontract"

local M = {}

M.schema = {
    type = "object",
    required = { "order_id", "customer", "lines", "total", "currency", "urgent", "notes" },
    additionalProperties = false,
    properties = {
        order_id = { type = "string", pattern = "^[0-9]{4,6}$" },
        customer = {
            type = "object", required = { "name", "email" }, additionalProperties = false,
            properties = { name = { type = "string", minLength = 1, maxLength = 100 },
                email = { type = "string", format = "email" } },
        },
        lines = {
            type = "array", minItems = 1, maxItems = 50,
            items = {
                type = "object", required = { "sku", "title", "qty", "price" }, additionalProperties = false,
                properties = {
                    sku = { type = "string", pattern = "^[A-Z]{3}-[0-9]{4}$" },
                    title = { type = "string", maxLength = 80 },
                    qty = { type = "integer", minimum = 1, maximum = 100 },
                    price = { type = "number", minimum = 0 },
                },
            },
        },
        total = { type = "number", minimum = 0 },
        currency = { enum = { "EUR", "USD", "GBP" } },
        urgent = { type = "boolean" },
        notes = { type = "string", maxLength = 300 },
    },
}

local lines = {}
for i = 1, 8 do
    lines[i] = string.format('{"sku":"ABC-%04d","title":"Running shoe model %d, size 42, colour blue","qty":%d,'
        .. '"price":%d.95}', 1000 + i, i, i % 3 + 1, 40 + i)
end
--- The reply checked per request (about 1 KB).
M.REPLY = '{"order_id":"104217","customer":{"name":"Erika Mustermann","email":"erika@example.com"},'
    .. '"lines":[' .. table.concat(lines, ",") .. '],"total":612.6,"currency":"EUR","urgent":true,'
    .. '"notes":"Customer asks for delivery before Friday; the parcel for the first order never arrived."}'

M.contract = jc.contract {
    name = "order_lines", version = "1.0.0", schema = M.schema,
    instructions = "Read the order mail and fill in the order.",
}
assert(M.contract:check(M.REPLY), "the bench reply must pass its contract")

--- The support-ticket contract and a 70-byte reply, for scale.
local here = debug.getinfo(1, "S").source:match("^@(.*)/bench/[^/]*$") or "."
local ticket_module = dofile(here .. "/examples/support_ticket.lua")
M.ticket = ticket_module.contract
M.TICKET_REPLY = '{"intent":"delivery","order_id":"1042","urgent":true,"summary":"Late."}'
local ticket_ctx -- what its rules read (the job module's context), opened per worker on first use

--- GET /check_ticket: contract:check on the 70-byte ticket reply, answers "ok".
function M.check_ticket()
    ticket_ctx = ticket_ctx or assert(ticket_module.context {})
    local v, err = M.ticket:check(M.TICKET_REPLY, { context = ticket_ctx })
    if not v then
        ngx.status = 500
        return ngx.say(tostring(err))
    end
    ngx.say("ok")
end

local core = require "jsoncontract.core"
local decoded = core.decode(M.REPLY)
local DECODED = { decoded = true }

--- GET /decode: the format gate alone on the 1 KB reply (jc.decode, building the Lua value).
function M.decode()
    ngx.say(core.decode(M.REPLY) and "ok" or "bad")
end

--- GET /validate: the schema gate alone on the decoded 1 KB reply (validator:validate).
function M.validate()
    ngx.say(M.contract.validator:validate(decoded, DECODED) and "ok" or "bad")
end

-- The handlers below read these upvalues: a request costs no table lookups on M.
local contract, REPLY = M.contract, M.REPLY
local say = ngx and ngx.say -- (the bench driver reads REPLY outside nginx)

--- GET /check: contract:check on the 1 KB reply (the Lua value built), answers "ok".
function M.check()
    local v, err = contract:check(REPLY)
    if not v then
        ngx.status = 500
        return say(tostring(err))
    end
    say("ok")
end

--- GET /check_json: contract:check_json on the 1 KB reply, answers with the checked JSON text
-- (what the gateway's 200 sends): the same gates, no Lua value built.
function M.check_json()
    local json, err = contract:check_json(REPLY)
    if not json then
        ngx.status = 500
        return say(tostring(err))
    end
    say(json)
end

local has_cjson, cjson = pcall(require, "cjson")

--- GET /cjson_decode: lua-cjson's decode alone on the 1 KB reply (lax, no schema), answers "ok":
-- the peer a hand-rolled handler would use, for scale.
function M.cjson_decode()
    if not has_cjson then
        ngx.status = 500
        return say("lua-cjson is not installed")
    end
    say(cjson.decode(REPLY) and "ok" or "bad")
end

-- The reply's value as Lua table-constructor source: arrays as lists, objects with ["name"] keys.
local function constructor(v)
    if type(v) == "table" then
        local out = {}
        if getmetatable(v) == core.array_mt then
            for i = 1, #v do out[i] = constructor(v[i]) end
        else
            local names = {}
            for k in pairs(v) do names[#names + 1] = k end
            table.sort(names)
            for i, k in ipairs(names) do out[i] = string.format("[%q] = %s", k, constructor(v[k])) end
        end
        return "{ " .. table.concat(out, ", ") .. " }"
    elseif type(v) == "string" then
        return string.format("%q", v)
    elseif type(v) == "boolean" then
        return tostring(v)
    end
    return string.format(math.type and math.type(v) == "integer" and "%d" or "%.17g", v)
end
local build_literal = assert(load("return function() return " .. constructor(decoded) .. " end"))()
M.literal = build_literal() -- the last value built, kept so no build is optimised away

--- GET /lua_literal: the 1 KB reply's value (11 tables) built by a Lua table constructor,
-- nothing parsed or checked, answers "ok": the least any check that returns plain Lua tables
-- spends on the value (LuaJIT copies each constructor's template table, keys already in place).
function M.lua_literal()
    M.literal = build_literal()
    ngx.say("ok")
end

--- GET /fixed_reply: the 1 KB reply as a fixed string from Lua (check_json's body, unchecked).
--- Which path validator:check_json takes in this worker: "ffi" or "C API (<why>)".
function M.ffi_status()
    local jffi = require "jsoncontract.ffi"
    ngx.say(jffi.available and "ffi" or ("C API (" .. tostring(jffi.reason) .. ")"))
end

function M.fixed_reply()
    say(REPLY)
end

return M
