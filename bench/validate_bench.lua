-- make bench: schema validation, side by side in one run:
--   jc    jsoncontract.core (compile once, validator:validate on decoded values)
--   ajv   ajv 8 compiled validators under Node (bench/ajv_bench.js), installed
--         into bench/node_modules on first run (npm); skipped when npm or node
--         is unavailable
--   lua   a straightforward pure-Lua validator (below) on lua-cjson values
-- on the support-ticket contract's instance (examples/support_ticket.lua), a 1 KB reply of
-- the same kind (bench/ticket_1k.lua) and a
-- few SchemaStore schemas with their own valid instances (../shared/corpora).
-- "validation alone" is validator:validate(value): the Lua value written to a tape in one
-- walk, then validated on the tape; "decode + validation" is validator:check(text), bytes
-- to a validated Lua value, as contract:check runs it (ajv: JSON.parse + validate); "bytes ->
-- verdict" is validator:check_json(text), the verdict and the accepted text with no Lua value
-- built, as the gateway runs it, beside the same ajv figure (JSON.parse + validate).
-- Prints ns per instance (best of BENCH_ROUNDS rounds) for validation alone, for
-- decode + validation and for bytes -> verdict, and the ratios jc/ajv and jc/lua (below 1.0: jc is
-- faster). Formats are not asserted on any side. Not a test: nothing asserts a time.
-- Then the call floor: validate(tape) against the schema true, nothing to check, beside each
-- ajv time (a ratio of 0.5 or more: 0.5x ajv is out of reach for any call of that shape), and
-- the same for bytes -> verdict: check_json("0") against true, beside ajv's JSON.parse + validate.
--   lua5.4 bench/validate_bench.lua      (after make)
-- Environment: BUILD, JC_SHARED, BENCH_ROUNDS (default 15), BENCH_NO_AJV=1.
local is_jit = type(jit) == "table"
local build = os.getenv("BUILD") or (is_jit and "build/luajit" or "build/lua5.4")
package.cpath = build .. "/?.so;" .. package.cpath
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path

local core = require "jsoncontract.core"
local ok_cjson, cjson = pcall(require, "cjson")
if not ok_cjson then
    io.stderr:write("validate_bench: lua-cjson not installed (apt-get install lua-cjson)\n")
    os.exit(1)
end
if cjson.decode_array_with_array_mt then cjson.decode_array_with_array_mt(true) end

local ROUNDS = tonumber(os.getenv("BENCH_ROUNDS")) or 15
local SHARED = os.getenv("JC_SHARED") or "../shared"
local clock, fmt = os.clock, string.format

local function read(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local t = f:read("*a")
    f:close()
    return t
end

-- ----------------------------------------------------------------------
-- The pure-Lua validator: the keywords these schemas use, written plainly.
-- 'pattern' goes through a small ECMA-regex -> Lua-pattern translation;
-- patterns it cannot translate (groups, alternation) are not checked.
-- ----------------------------------------------------------------------
local NULL = cjson.null
local array_mt = cjson.array_mt

local function is_array(t)
    local mt = getmetatable(t)
    if mt ~= nil and (mt == array_mt or mt == core.array_mt) then return true end
    local n = #t
    if n == 0 then return false end
    local c = 0
    for _ in pairs(t) do c = c + 1 end
    return c == n
end

local function json_type(v)
    local t = type(v)
    if t == "string" then return "string" end
    if t == "number" then return "number" end
    if t == "boolean" then return "boolean" end
    if v == NULL then return "null" end
    if t == "table" then return is_array(v) and "array" or "object" end
    return "other"
end

local function equal(a, b)
    if type(a) ~= "table" or type(b) ~= "table" then return a == b end
    for k, x in pairs(a) do if not equal(x, b[k]) then return false end end
    for k in pairs(b) do if a[k] == nil then return false end end
    return true
end

local CLASS = { d = "%d", w = "[%w_]", s = "%s", D = "%D", W = "[^%w_]", S = "%S" }
local function translate(re)
    local out, i, n = {}, 1, #re
    local anchored_end = false
    if re:sub(1, 1) == "^" then out[1] = "^"; i = 2 end
    if re:sub(-1) == "$" and re:sub(-2, -2) ~= "\\" then anchored_end = true; n = n - 1 end
    local last
    while i <= n do
        local c = re:sub(i, i)
        local atom
        if c == "\\" then
            local e = re:sub(i + 1, i + 1)
            atom = CLASS[e] or ("%" .. e):gsub("%%(%w)", "%1")
            if not CLASS[e] and e:match("%p") then atom = "%" .. e end
            i = i + 2
        elseif c == "[" then
            local j = re:find("]", i + 2, true)
            if not j then return nil end
            local body = re:sub(i + 1, j - 1):gsub("\\(.)", function(e) return CLASS[e] and CLASS[e]:gsub("[%[%]]", "") or "%" .. e end)
            atom = "[" .. body .. "]"
            i = j + 1
        elseif c == "(" or c == "|" or c == ")" then
            return nil
        elseif c == "." then
            atom = "."; i = i + 1
        elseif c:match("[%^%$%%]") then
            atom = "%" .. c; i = i + 1
        elseif c == "{" then
            local a, b, e = re:match("^{(%d+),?(%d*)}()", i)
            if not a or not last then return nil end
            a = tonumber(a)
            b = (b == "" and not re:sub(i, e):find(",")) and a or tonumber(b)
            out[#out] = nil
            for _ = 1, a do out[#out + 1] = last end
            if b then for _ = a + 1, b do out[#out + 1] = last .. "?" end
            else out[#out + 1] = last .. "*" end
            last = nil
            i = e
        elseif c == "*" or c == "+" or c == "?" then
            if not last then return nil end
            out[#out] = last .. (c == "+" and "+" or c == "*" and "*" or "?")
            last = nil
            i = i + 1
        else
            atom = c:match("%w") and c or "%" .. c
            i = i + 1
        end
        if atom then out[#out + 1] = atom; last = atom end
    end
    if anchored_end then out[#out + 1] = "$" end
    return table.concat(out)
end

local lua_validate
local function check(schema, v, root)
    if schema == true then return true end
    if schema == false then return false end
    if schema["$ref"] then
        local target = root
        for tok in schema["$ref"]:gmatch("/([^/]+)") do
            target = target[tok:gsub("~1", "/"):gsub("~0", "~")]
        end
        if not check(target, v, root) then return false end
    end
    local jt = json_type(v)
    local st = schema.type
    if st then
        local okt = false
        local list = type(st) == "table" and st or { st }
        for _, t in ipairs(list) do
            if t == jt or (t == "integer" and jt == "number" and v == math.floor(v))
               or (t == "number" and jt == "number") then okt = true end
        end
        if not okt then return false end
    end
    if schema.enum then
        local found = false
        for _, e in ipairs(schema.enum) do if equal(e, v) then found = true; break end end
        if not found then return false end
    end
    if schema.const ~= nil and not equal(schema.const, v) then return false end
    if jt == "object" then
        if schema.required then
            for _, k in ipairs(schema.required) do if v[k] == nil then return false end end
        end
        local props, pp, ap = schema.properties, schema.patternProperties, schema.additionalProperties
        local count = 0
        for k, x in pairs(v) do
            count = count + 1
            local matched = false
            if props and props[k] ~= nil then
                matched = true
                if not check(props[k], x, root) then return false end
            end
            if pp then
                for re, sub in pairs(pp) do
                    local lp = translate(re)
                    if lp and k:find(lp) then
                        matched = true
                        if not check(sub, x, root) then return false end
                    end
                end
            end
            if not matched and ap ~= nil and not check(ap, x, root) then return false end
            if schema.propertyNames and not check(schema.propertyNames, k, root) then return false end
        end
        if schema.minProperties and count < schema.minProperties then return false end
        if schema.maxProperties and count > schema.maxProperties then return false end
    elseif jt == "array" then
        local n = #v
        if schema.minItems and n < schema.minItems then return false end
        if schema.maxItems and n > schema.maxItems then return false end
        local items = schema.items
        if items ~= nil then
            if type(items) == "table" and is_array(items) then
                for i = 1, n do
                    local s = items[i] or schema.additionalItems
                    if s ~= nil and not check(s, v[i], root) then return false end
                end
            else
                for i = 1, n do if not check(items, v[i], root) then return false end end
            end
        end
        if schema.uniqueItems then
            for i = 1, n do for j = i + 1, n do if equal(v[i], v[j]) then return false end end end
        end
        if schema.contains then
            local hit = false
            for i = 1, n do if check(schema.contains, v[i], root) then hit = true; break end end
            if not hit then return false end
        end
    elseif jt == "string" then
        if schema.minLength or schema.maxLength then
            local len = utf8 and utf8.len(v) or #v:gsub("[\128-\191]", "")
            if schema.minLength and len < schema.minLength then return false end
            if schema.maxLength and len > schema.maxLength then return false end
        end
        if schema.pattern then
            local lp = translate(schema.pattern)
            if lp and not v:find(lp) then return false end
        end
    elseif jt == "number" then
        if schema.minimum and v < schema.minimum then return false end
        if schema.maximum and v > schema.maximum then return false end
        if type(schema.exclusiveMinimum) == "number" and v <= schema.exclusiveMinimum then return false end
        if type(schema.exclusiveMaximum) == "number" and v >= schema.exclusiveMaximum then return false end
        if schema.multipleOf then
            local q = v / schema.multipleOf
            if math.abs(q - math.floor(q + 0.5)) > 1e-9 then return false end
        end
    end
    if schema.allOf then
        for _, s in ipairs(schema.allOf) do if not check(s, v, root) then return false end end
    end
    if schema.anyOf then
        local any = false
        for _, s in ipairs(schema.anyOf) do if check(s, v, root) then any = true; break end end
        if not any then return false end
    end
    if schema.oneOf then
        local hits = 0
        for _, s in ipairs(schema.oneOf) do if check(s, v, root) then hits = hits + 1 end end
        if hits ~= 1 then return false end
    end
    if schema["not"] ~= nil and check(schema["not"], v, root) then return false end
    if schema["if"] ~= nil then
        if check(schema["if"], v, root) then
            if schema["then"] ~= nil and not check(schema["then"], v, root) then return false end
        elseif schema["else"] ~= nil and not check(schema["else"], v, root) then
            return false
        end
    end
    return true
end
lua_validate = function(schema, v) return check(schema, v, schema) end

-- ----------------------------------------------------------------------
-- Cases
-- ----------------------------------------------------------------------
local cases = {}

local ticket = dofile("examples/support_ticket.lua")
local TICKET = '{"intent":"delivery","order_id":"55310","urgent":true,"summary":"The customer\'s '
    .. 'parcel for order 55310 has not arrived after two weeks and they need it before Friday for '
    .. 'a birthday; they ask for a refund or a replacement sent by express."}'
cases[#cases + 1] = { name = "support-ticket", draft = "2020-12", schema_text = core.encode(ticket.schema),
                      instance = TICKET }

-- a 1 KB reply of the same kind: the ticket's fields plus what a helpdesk triage asks for
local ticket_1k = dofile("bench/ticket_1k.lua")
cases[#cases + 1] = { name = "support-ticket-1k", draft = "2020-12", schema_text = core.encode(ticket_1k.schema),
                      instance = ticket_1k.TEXT, lschema = ticket_1k.schema }

local STORE = {
    { "chart", "full.json" }, { "codecov", "codecov-example-1.json" },
    { "claude-code-keybindings", "all-contexts.json" }, { "ninjs-2.0", "001_ninjs_example.json" },
    { "unist", "root-full.json" },
}
for _, s in ipairs(STORE) do
    local dir = SHARED .. "/corpora/schemastore/" .. s[1]
    local schema_text, instance = read(dir .. "/schema.json"), read(dir .. "/valid/" .. s[2])
    if schema_text and instance then
        local schema = core.decode(schema_text)
        local draft = type(schema) == "table" and tostring(schema["$schema"] or ""):find("2020") and "2020-12"
            or "draft7"
        cases[#cases + 1] = { name = s[1], draft = draft, schema_text = schema_text, instance = instance }
    end
end
if #cases == 1 then
    print("(SchemaStore corpus not found under " .. SHARED .. "/corpora: the ticket only)")
end

-- Best ns per call of fn over ROUNDS rounds of n calls (n sized to ~20 ms).
local function best(fn)
    local n = 100
    while true do
        local t0 = clock()
        for _ = 1, n do fn() end
        if clock() - t0 > 0.02 or n > 1e7 then break end
        n = n * 4
    end
    local min = math.huge
    for _ = 1, ROUNDS do
        local t0 = clock()
        for _ = 1, n do fn() end
        local dt = (clock() - t0) / n * 1e9
        if dt < min then min = dt end
    end
    return min
end

-- ----------------------------------------------------------------------
-- ajv (Node)
-- ----------------------------------------------------------------------
local function ajv_results()
    if os.getenv("BENCH_NO_AJV") then return nil, "BENCH_NO_AJV set" end
    if os.execute("node --version >/dev/null 2>&1") ~= true and os.execute("node --version >/dev/null 2>&1") ~= 0 then
        return nil, "node not found"
    end
    if not read("bench/node_modules/ajv/package.json") then
        print("installing ajv into bench/node_modules (npm install, first run only)...")
        local ok = os.execute("cd bench && npm install --no-audit --no-fund --silent >/dev/null 2>&1")
        if (ok ~= true and ok ~= 0) or not read("bench/node_modules/ajv/package.json") then
            return nil, "npm install failed (registry unreachable?)"
        end
    end
    local parts = {}
    for i, c in ipairs(cases) do
        parts[i] = fmt('{"name":%s,"draft":%s,"schema":%s,"instance":%s}', core.encode(c.name),
            core.encode(c.draft), c.schema_text, core.encode(c.instance))
    end
    local tmp = os.tmpname()
    local f = assert(io.open(tmp, "wb"))
    f:write("[" .. table.concat(parts, ",") .. "]")
    f:close()
    local p = io.popen("BENCH_ROUNDS=" .. ROUNDS .. " node bench/ajv_bench.js " .. tmp)
    local res = {}
    for line in p:lines() do
        local name, v, pv = line:match("^(%S+) (%S+) (%S+)$")
        if name then res[name] = { tonumber(v), tonumber(pv) } end
    end
    p:close()
    os.remove(tmp)
    return res
end

local ajv, why = ajv_results()
if not ajv then print("ajv skipped: " .. why) end

-- ----------------------------------------------------------------------
-- Run
-- ----------------------------------------------------------------------
-- LuaJIT: validator:validate(tape) goes through the FFI (jsoncontract.ffi) as in a contract
local ok_ffi, jffi = pcall(require, "jsoncontract.ffi")
print(fmt("%s, %d rounds; ns per instance (validation alone | decode + validation | bytes -> verdict);"
    .. " validate(tape) and check_json through %s", is_jit and jit.version or _VERSION, ROUNDS,
    ok_ffi and jffi.available and "the FFI" or "the C API"))
print("  validation alone: jc = validator:validate(tape) (a tape from core.parse), jc(lua) ="
    .. " validator:validate(Lua value) (written to a tape, then validated)")
print("  decode + validation: jc = validator:check(text) (a Lua value), ajv = JSON.parse + validate;"
    .. " bytes -> verdict: jc = validator:check_json(text) (no Lua value), beside the same ajv figure")
print(fmt("%-24s %6s | %8s %8s %8s %8s %7s %7s %7s | %8s %8s %8s %7s %7s | %8s %7s", "case", "bytes",
    "jc", "jc(lua)", "ajv", "lua", "jc/ajv", "(lua)/a", "jc/lua", "jc", "ajv", "lua", "jc/ajv", "jc/lua",
    "jc", "jc/ajv"))
local sink = 0
-- The floor of "validation alone" in this loop: one validate call on a tape against the schema
-- 'true' (nothing to check). No validator called from Lua this way costs less per instance.
-- Measured beside every case, the least of them kept: one measurement is at the mercy of
-- whatever else the machine does at that moment.
local floor = math.huge
local always, tiny = core.compile(true), assert(core.parse("{}"))
-- The same for "bytes -> verdict": check_json of the shortest text against 'true', the call
-- and the fixed cost of a parse and a verdict, nothing in them to do.
local json_floor = math.huge
local function measure_floor()
    floor = math.min(floor, best(function() if always:validate(tiny) then sink = sink + 1 end end))
    json_floor = math.min(json_floor, best(function() if always:check_json("0") then sink = sink + 1 end end))
end
local floors, json_floors = {}, {}
for _, c in ipairs(cases) do
    local schema = core.decode(c.schema_text)
    local validator = core.compile(schema)
    local value = core.decode(c.instance)
    assert(validator:validate(value), "jc rejects " .. c.name)
    assert(validator:check_json(c.instance), "jc check_json rejects " .. c.name)
    local lschema = cjson.decode(c.schema_text)
    if c.name == "support-ticket" then lschema = ticket.schema end
    if c.lschema then lschema = c.lschema end
    local lvalue = cjson.decode(c.instance)
    local lua_ok = lua_validate(lschema, lvalue)
    local tape = assert(core.parse(c.instance))
    measure_floor()
    local jt = best(function() if validator:validate(tape) then sink = sink + 1 end end)
    local jv = best(function() if validator:validate(value) then sink = sink + 1 end end)
    local lv = best(function() if lua_validate(lschema, lvalue) then sink = sink + 1 end end)
    local text = c.instance
    -- as contract:check does: validator:check(text) parses to a tape, validates the tape and
    -- builds the Lua value only then
    local jdv = best(function() if validator:check(text) then sink = sink + 1 end end)
    local ldv = best(function() if lua_validate(lschema, cjson.decode(text)) then sink = sink + 1 end end)
    local jcv = best(function() if validator:check_json(text) then sink = sink + 1 end end)
    local a = ajv and ajv[c.name]
    local function r(x, y) return y and fmt("%7.2f", x / y) or fmt("%7s", "-") end
    local function ns(x) return x and fmt("%8.0f", x) or fmt("%8s", "-") end
    print(fmt("%-24s %6d | %s %s %s %s %s %s %s | %s %s %s %s %s | %s %s%s", c.name, #c.instance,
        ns(jt), ns(jv), ns(a and a[1]), ns(lv), r(jt, a and a[1]), r(jv, a and a[1]), r(jt, lv),
        ns(jdv), ns(a and a[2]), ns(ldv), r(jdv, a and a[2]), r(jdv, ldv), ns(jcv), r(jcv, a and a[2]),
        lua_ok and "" or "  (lua validator rejects it)"))
    if a then
        floors[#floors + 1] = { c.name, a[1] }
        json_floors[#json_floors + 1] = { c.name, a[2] }
    end
end
for i, f in ipairs(floors) do floors[i] = fmt("%s %.2f", f[1], floor / f[2]) end
print(fmt("  call floor: validate(tape) against the schema true costs %.0f ns here (one call, nothing"
    .. " checked);", floor))
if #floors > 0 then
    print("  floor/ajv per case, where it is 0.5 or more no validator called this way reaches 0.5x ajv:")
    print("    " .. table.concat(floors, ", "))
end
for i, f in ipairs(json_floors) do json_floors[i] = fmt("%s %.2f", f[1], json_floor / f[2]) end
print(fmt("  bytes -> verdict floor: check_json(\"0\") against the schema true costs %.0f ns here (one"
    .. " call, a parse and a verdict with nothing to do)%s", json_floor, #json_floors > 0 and "; per case /"
    .. " ajv's JSON.parse + validate:" or ""))
if #json_floors > 0 then
    print("    " .. table.concat(json_floors, ", "))
end
if sink < 0 then print(sink) end
