--- The stand-in's instance generator: a plausible instance of any JSON Schema, as JSON text,
-- built to satisfy the schema by construction (bounded; see `instance_json`). It knows no
-- example contract.
-- @module jsoncontract.standin.generate
local stext = require "jsoncontract.standin.text"

local floor, ceil = math.floor, math.ceil
local byte, sub, find, gsub, format, rep =
    string.byte, string.sub, string.find, string.gsub, string.format, string.rep
local concat, sort = table.concat, table.sort
local match = string.match
local pairs, ipairs, type, tostring, tonumber, next, getmetatable, pcall, setmetatable, error =
    pairs, ipairs, type, tostring, tonumber, next, getmetatable, pcall, setmetatable, error

local jstr, jobj, ulen, uprefix = stext.jstr, stext.jobj, stext.ulen, stext.uprefix

local _M = { _VERSION = "0.1.0" }


-- Bounds on one instance_json call: bytes of generated text, and steps of schema work (nodes,
-- keys copied or sorted). A schema that needs more gets a small best-effort value instead:
-- the stand-in is a modest model, and the client's validator rejects that answer.
local GEN_BUDGET = 65536
local GEN_MAX_STEPS = 1000000
local GIVE_UP = setmetatable({}, { __tostring = function() return "instance budget exhausted" end })
local gen_left, gen_steps = GEN_BUDGET, 0

-- Take n bytes of output from the budget; gives up when it runs out.
local function spend(n)
    gen_left = gen_left - n
    if gen_left < 0 then error(GIVE_UP, 0) end
end

-- Count n steps of work; gives up past GEN_MAX_STEPS.
local function step(n)
    gen_steps = gen_steps + n
    if gen_steps > GEN_MAX_STEPS then error(GIVE_UP, 0) end
end

local function resolve(root, s)
    local depth = 0
    while type(s) == "table" and type(s["$ref"]) == "string" and depth < 16 do
        local ref = s["$ref"]
        local node = root
        for part in ref:gmatch("[^/#]+") do
            step(1)
            node = type(node) == "table" and node[gsub(gsub(part, "~1", "/"), "~0", "~")] or nil
        end
        s, depth = node, depth + 1
    end
    return type(s) == "table" and s or {}
end

local function sorted_keys(t)
    local ks = {}
    for k in pairs(t) do
        if type(k) == "string" then ks[#ks + 1] = k end
    end
    step(#ks)
    sort(ks)
    return ks
end

-- A keyword's value when it is a finite number (a string such as "1000000000" is not a number
-- in a schema: it is ignored, never converted).
local function num(v)
    if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge then return nil end
    return v
end

local function minimal(root, s, depth)
    s = resolve(root, s)
    if depth > 24 then return "null" end
    if s.const ~= nil then s = { enum = { s.const } } end
    if type(s.enum) == "table" and s.enum[1] ~= nil then
        local v = s.enum[1]
        if type(v) == "string" then return jstr(v) end
        if type(v) == "number" then return (v == floor(v) and format("%d", v) or tostring(v)) end
        if type(v) == "boolean" then return tostring(v) end
        return "null"
    end
    for _, key in ipairs({ "anyOf", "oneOf" }) do
        if type(s[key]) == "table" and s[key][1] ~= nil then return minimal(root, s[key][1], depth + 1) end
    end
    if type(s.allOf) == "table" and s.allOf[1] ~= nil then return minimal(root, s.allOf[1], depth + 1) end
    local t = s.type
    if type(t) == "table" then
        local pick = t[1]
        for _, x in ipairs(t) do
            if x ~= "null" then pick = x break end
        end
        t = pick
    end
    if t == nil then t = type(s.properties) == "table" and "object" or (s.items and "array") or "string" end
    if t == "object" then
        local props = type(s.properties) == "table" and s.properties or {}
        local fields, seen = {}, {}
        if type(s.required) == "table" then
            for _, k in ipairs(s.required) do
                if type(k) == "string" and not seen[k] then
                    seen[k] = true
                    fields[#fields + 1] = { k, minimal(root, props[k] or {}, depth + 1) }
                end
            end
        end
        return jobj(fields)
    elseif t == "array" then
        local n = num(s.minItems) or 0
        if n <= 0 then return "[]" end
        local items = {}
        for i = 1, math.min(n, 64) do items[i] = minimal(root, s.items or {}, depth + 1) end
        return "[" .. concat(items, ",") .. "]"
    elseif t == "integer" or t == "number" then
        local m = num(s.minimum) or (num(s.exclusiveMinimum) and s.exclusiveMinimum + 1) or 0
        if t == "integer" or m == floor(m) then return format("%d", ceil(m)) end
        return tostring(m)
    elseif t == "boolean" then
        return "false"
    elseif t == "null" then
        return "null"
    end
    local n = num(s.minLength) or 0
    return jstr(rep("x", math.max(0, math.min(n, 4096))))
end

--- A minimal instance of any JSON Schema, as JSON text (first enum value, "", 0, false, [] ...).
-- @tparam table schema decoded JSON Schema
-- @treturn string JSON text
function _M.minimal_json(schema)
    gen_steps = 0
    return minimal(schema, schema, 0)
end


-- Days in each month of a non-leap year (2027 onwards: dates made from a start in June 2027).
local MONTH_DAYS = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }

-- The date n days after 2027-06-12, as "YYYY-MM-DD" (distinct for every n >= 0).
local function date_after(n)
    local y, m, d = 2027, 6, 12 + floor(n)
    while true do
        local len = MONTH_DAYS[m]
        if m == 2 and (y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0)) then len = 29 end
        if d <= len then break end
        d, m = d - len, m + 1
        if m > 12 then m, y = 1, y + 1 end
    end
    return format("%04d-%02d-%02d", y, m, d)
end

local FORMAT_SAMPLES = {
    date = "2027-06-12", ["date-time"] = "2027-06-12T09:30:00Z", time = "09:30:00Z",
    email = "user@example.com", ["idn-email"] = "user@example.com",
    uuid = "123e4567-e89b-42d3-a456-426614174000", uri = "https://example.com/",
    ["uri-reference"] = "https://example.com/", iri = "https://example.com/",
    ["iri-reference"] = "https://example.com/", url = "https://example.com/",
    hostname = "example.com", ["idn-hostname"] = "example.com", ipv4 = "192.0.2.1",
    ipv6 = "2001:db8::1", duration = "P1D", ["json-pointer"] = "/a",
    ["relative-json-pointer"] = "0", regex = "^a$", ["uri-template"] = "https://example.com/{id}",
}

-- Characters a class escape or a "." stands for, as a candidate list (first = preferred).
local ESCAPE_SETS = {
    d = "1023456789", w = "abcxyz0_", s = " \t\n", S = "xa1-", D = "xa-", W = "-. ",
}
local NEG_CANDIDATES = { "x", "a", "e", "A", "1", "-", "_", ".", " " }

local function class_escape_has(e, ch)
    if ESCAPE_SETS[e] then
        if e == "S" then return not find(ch, "^%s$") end
        if e == "D" then return not find(ch, "^%d$") end
        if e == "W" then return not find(ch, "^[%w_]$") end
        if e == "s" then return find(ch, "^%s$") ~= nil end
        if e == "d" then return find(ch, "^%d$") ~= nil end
        if e == "w" then return find(ch, "^[%w_]$") ~= nil end
    end
    return ch == e
end

-- A tiny pattern reader: enough of ECMA-262 regex to build a matching string for the patterns
-- schemas use (anchors, literals, escapes, classes, groups with alternation, quantifiers).
-- Returns the string, or nil when the pattern uses something it does not know.
local function gen_pattern(p, grow)
    local pos, n = 1, #p
    step(n) -- reading the pattern is work too: a long one repeated over many nodes adds up
    local alt -- forward declaration

    -- The UTF-8 character at i and the position after it.
    local function uchar(i)
        local e = i + 1
        while e <= n do
            local b = byte(p, e)
            if b < 128 or b >= 192 then break end
            e = e + 1
        end
        return sub(p, i, e - 1), e
    end

    local function class()
        -- at p[pos] == "["
        pos = pos + 1
        local neg = false
        if sub(p, pos, pos) == "^" then neg, pos = true, pos + 1 end
        local items = {}
        local first = true
        while pos <= n and (sub(p, pos, pos) ~= "]" or first) do
            first = false
            local c = sub(p, pos, pos)
            local item
            if c == "\\" then
                local e = sub(p, pos + 1, pos + 1)
                if e == "p" or e == "P" then
                    local close = find(p, "}", pos, true)
                    if not close then return nil end
                    local name = sub(p, pos + 3, close - 1)
                    item = { prop = name, neg = e == "P" }
                    pos = close + 1
                else
                    item = { esc = e }
                    pos = pos + 2
                end
            else
                c, pos = uchar(pos)
                item = { lo = c, hi = c }
            end
            if item.lo and sub(p, pos, pos) == "-" and sub(p, pos + 1, pos + 1) ~= "]" and pos + 1 <= n then
                local hi
                if sub(p, pos + 1, pos + 1) == "\\" then
                    hi, pos = sub(p, pos + 2, pos + 2), pos + 3
                else
                    hi, pos = uchar(pos + 1)
                end
                item.hi = hi
            end
            items[#items + 1] = item
        end
        if sub(p, pos, pos) ~= "]" then return nil end
        pos = pos + 1
        local function has(ch)
            for _, it in ipairs(items) do
                if it.esc and class_escape_has(it.esc, ch) then return true end
                if it.lo and ch >= it.lo and ch <= it.hi then return true end
                if it.prop then
                    local m
                    if find(it.prop, "^L") then m = find(ch, "^%a$") ~= nil
                    elseif find(it.prop, "^N") then m = find(ch, "^%d$") ~= nil
                    elseif it.prop == "Z" or it.prop == "Zs" then m = ch == " "
                    elseif it.prop == "Cc" or it.prop == "C" then m = find(ch, "^%c$") ~= nil
                    else m = false end
                    if it.neg then m = not m end
                    if m then return true end
                end
            end
            return false
        end
        if neg then
            for _, ch in ipairs(NEG_CANDIDATES) do
                if not has(ch) then return ch end
            end
            return nil
        end
        local it = items[1]
        if not it then return nil end
        if it.lo then return it.lo end
        if it.esc then return ESCAPE_SETS[it.esc] and sub(ESCAPE_SETS[it.esc], 1, 1) or it.esc end
        for _, ch in ipairs(NEG_CANDIDATES) do
            if has(ch) then return ch end
        end
        return nil
    end

    local function atom()
        local c = sub(p, pos, pos)
        if c == "(" then
            pos = pos + 1
            if sub(p, pos, pos) == "?" then
                local k = sub(p, pos + 1, pos + 1)
                if k == ":" then
                    pos = pos + 2
                elseif k == "<" and find(sub(p, pos + 2, pos + 2), "[%a_]") then
                    local close = find(p, ">", pos, true)
                    if not close then return nil end
                    pos = close + 1
                else
                    return nil -- lookaround: not attempted
                end
            end
            local s = alt()
            if not s or sub(p, pos, pos) ~= ")" then return nil end
            pos = pos + 1
            return s
        elseif c == "[" then
            return class()
        elseif c == "\\" then
            local e = sub(p, pos + 1, pos + 1)
            pos = pos + 2
            if e == "p" or e == "P" then
                local close = find(p, "}", pos, true)
                if not close then return nil end
                local name = sub(p, pos + 1, close - 1)
                pos = close + 1
                if e == "P" then return "x" end
                if find(name, "^Lu") then return "A" end
                if find(name, "^L") then return "a" end
                if find(name, "^N") then return "1" end
                if find(name, "^Z") then return " " end
                return nil
            end
            if ESCAPE_SETS[e] then return sub(ESCAPE_SETS[e], 1, 1) end
            if find(e, "^%d$") or e == "b" or e == "B" or e == "k" or e == "u" or e == "x" or e == "c" then
                return nil
            end
            if e == "n" then return "\n" end
            if e == "t" then return "\t" end
            return e
        elseif c == "." then
            pos = pos + 1
            return "x"
        elseif c == "" or c == ")" or c == "|" then
            return nil
        elseif c == "^" or c == "$" then
            return nil
        end
        if find(c, "[*+?{]") then return nil end
        c, pos = uchar(pos)
        return c
    end

    local function seq()
        local out = {}
        while pos <= n do
            local c = sub(p, pos, pos)
            if c == "|" or c == ")" then break end
            if c == "^" and pos == 1 then
                pos = pos + 1
            elseif c == "$" and (pos == n or find(sub(p, pos + 1, pos + 1), "[|)]")) then
                pos = pos + 1
            else
                local a = atom()
                if not a then return nil end
                local lo, hi = 1, 1
                local q = sub(p, pos, pos)
                if q == "?" then lo, hi, pos = 0, 1, pos + 1
                elseif q == "*" then lo, hi, pos = 0, math.huge, pos + 1
                elseif q == "+" then lo, hi, pos = 1, math.huge, pos + 1
                elseif q == "{" then
                    local a1, b1, close = match(p, "^{(%d*),?(%d*)}()", pos)
                    if not close then return nil end
                    local comma = find(sub(p, pos, close - 1), ",", 1, true)
                    lo = tonumber(a1) or 0
                    hi = comma and (tonumber(b1) or math.huge) or lo
                    pos = close
                end
                if lo ~= 1 or hi ~= 1 then
                    local nx = sub(p, pos, pos)
                    if nx == "?" or nx == "+" then pos = pos + 1 end
                end
                local count = lo
                if hi > lo and grow > 0 then count = math.min(hi, lo + grow) end
                if count > 256 then return nil end
                spend(#a * count) -- nested quantifiers multiply: every level is charged
                out[#out + 1] = rep(a, count)
            end
        end
        return concat(out)
    end

    alt = function()
        local first = seq()
        while sub(p, pos, pos) == "|" do
            pos = pos + 1
            local other = seq()
            if not first then first = other end
        end
        return first
    end

    local ok, s = pcall(alt)
    if not ok and s == GIVE_UP then error(GIVE_UP, 0) end
    if not ok or not s or pos <= n then return nil end
    return s
end

-- A string for a string schema; `variant` (1, 2, ...) makes distinct strings for unique arrays.
local function gen_string(s, variant, hint)
    local minl = math.max(num(s.minLength) or 0, 0)
    local maxl = num(s.maxLength)
    spend(minl)
    local str = FORMAT_SAMPLES[s.format]
    if str and variant > 1 then
        if s.format == "date" then str = date_after(variant - 1)
        elseif s.format == "date-time" then str = date_after(variant - 1) .. "T09:30:00Z"
        elseif s.format == "email" then str = "user" .. variant .. "@example.com"
        else str = nil end
    end
    if not str and type(s.pattern) == "string" then
        local p = s.pattern
        local start_anchor = sub(p, 1, 1) == "^"
        local end_anchor = sub(p, -1) == "$" and sub(p, -2, -2) ~= "\\"
        local grow = variant - 1
        for _ = 1, 2 do
            local g = gen_pattern(p, grow)
            if not g then break end
            if not end_anchor and (ulen(g) < minl or (variant > 1 and grow == 0)) then
                g = g .. rep("x", math.max(minl - ulen(g), 0)) .. (variant > 1 and tostring(variant) or "")
            elseif not start_anchor and ulen(g) < minl then
                g = rep("x", minl - ulen(g)) .. g
            end
            if ulen(g) >= minl then
                str = g
                break
            end
            grow = minl + variant
        end
        if not str then str = gen_pattern(p, 0) end
    end
    if not str then
        str = hint or "example"
        if variant > 1 then str = str .. "-" .. variant end
    end
    if ulen(str) < minl then str = str .. rep("x", minl - ulen(str)) end
    if maxl and ulen(str) > maxl then str = uprefix(str, maxl) end
    return str
end

local function num_text(v)
    if v ~= v or v == math.huge or v == -math.huge then return "0" end
    if v == floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then return format("%d", v) end
    for p = 15, 16 do -- the shortest text that reads back as v
        local t = format("%." .. p .. "g", v)
        if tonumber(t) == v then return t end
    end
    return format("%.17g", v)
end

-- The shortest decimal text of a double, split as M x 10^E with M an integer (as a number).
local function decimal_parts(v)
    local t
    for p = 1, 17 do
        t = format("%." .. p .. "g", v)
        if tonumber(t) == v then break end
    end
    local mant, ex = match(t, "^([^e]+)e?([-+]?%d*)$")
    local int, frac = match(mant or "", "^(-?%d*)%.?(%d*)$")
    local m = tonumber((int or "") .. (frac or ""))
    if not m then return nil end
    return m, (tonumber(ex) or 0) - #frac
end

-- The JSON text of K x 10^E (K an integer below 2^53), written as a plain decimal when short.
local function decimal_text(k, e)
    if e >= 0 then
        if k * 10 ^ e < 2 ^ 53 then return format("%d", k * 10 ^ e) end
        return format("%de%d", k, e)
    end
    local digits = format("%d", k < 0 and -k or k)
    if -e > 20 then return format("%de%d", k, e) end
    if #digits <= -e then digits = rep("0", -e - #digits + 1) .. digits end
    local t = sub(digits, 1, #digits + e) .. "." .. sub(digits, #digits + e + 1)
    t = gsub(gsub(t, "0+$", ""), "%.$", "")
    return (k < 0 and "-" or "") .. t
end

local function gen_number(s, integer, variant)
    local lo = num(s.minimum)
    local xlo = num(s.exclusiveMinimum)
    if s.exclusiveMinimum == true and lo then xlo, lo = lo, nil end -- draft 4
    local hi = num(s.maximum)
    local xhi = num(s.exclusiveMaximum)
    if s.exclusiveMaximum == true and hi then xhi, hi = hi, nil end
    local v
    if lo then v = lo
    elseif xlo then v = integer and floor(xlo) + 1 or xlo + 1
    elseif hi and hi < 1 then v = hi
    elseif xhi and xhi <= 1 then v = integer and ceil(xhi) - 1 or xhi - 1
    else v = integer and 1 or 1 end
    if integer then v = ceil(v) end
    v = v + (variant - 1)
    local m = num(s.multipleOf)
    if not m or m <= 0 then return num_text(v) end
    -- A multiple written in decimal as K x M x 10^E (the validator's multipleOf is exact in
    -- decimal, so 3 x 0.1 is "0.3", not 0.30000000000000004), the first within the bounds.
    local mm, me = decimal_parts(m)
    local q = v / m
    if mm and q == q and q > -2 ^ 52 and q < 2 ^ 52 then
        local k = ceil(q)
        for i = 0, 16 do
            local kk = (k + i) * mm
            if kk > -2 ^ 53 and kk < 2 ^ 53 then
                local text = decimal_text(kk, me)
                local x = tonumber(text)
                if x and (not lo or x >= lo) and (not xlo or x > xlo) and (not hi or x <= hi)
                    and (not xhi or x < xhi) and (not integer or x == floor(x)) then
                    return text
                end
            end
        end
    end
    -- v itself: right when m is a power of ten far below v (1e300 for 1e-300), else best effort
    return num_text(v)
end

local function first_type(t, schema)
    if type(t) == "table" then
        for _, x in ipairs(t) do
            if x ~= "null" then return x end
        end
        return t[1]
    end
    if t ~= nil then return t end
    if type(schema.properties) == "table" or type(schema.required) == "table" then return "object" end
    if schema.items ~= nil or schema.prefixItems ~= nil or schema.minItems ~= nil then return "array" end
    if schema.pattern or schema.format or schema.minLength or schema.maxLength then return "string" end
    if schema.minimum or schema.maximum or schema.multipleOf then return "number" end
    return "string"
end

-- allOf parts folded into one schema (shallow; properties and required merged).
local function fold_all_of(root, s)
    if type(s.allOf) ~= "table" then return s end
    local out = {}
    for k, v in pairs(s) do
        step(1)
        if k ~= "allOf" then out[k] = v end
    end
    for _, part in ipairs(s.allOf) do
        part = resolve(root, part)
        for k, v in pairs(part) do
            step(1)
            if k == "properties" and type(v) == "table" then
                local props = {}
                for pk, pv in pairs(type(out.properties) == "table" and out.properties or {}) do
                    step(1)
                    props[pk] = pv
                end
                for pk, pv in pairs(v) do
                    step(1)
                    if props[pk] == nil then props[pk] = pv end
                end
                out.properties = props
            elseif k == "required" and type(v) == "table" then
                local req = {}
                for _, r in ipairs(type(out.required) == "table" and out.required or {}) do req[#req + 1] = r end
                for _, r in ipairs(v) do req[#req + 1] = r end
                step(#req)
                out.required = req
            elseif out[k] == nil then
                out[k] = v
            end
        end
    end
    return out
end

local function literal_json(v, depth)
    local tv = type(v)
    if tv == "string" then return jstr(v) end
    if tv == "number" then return num_text(v) end
    if tv == "boolean" then return tostring(v) end
    if tv == "table" and depth < 16 then
        if v[1] ~= nil or next(v) == nil then
            local parts = {}
            for i, x in ipairs(v) do parts[i] = literal_json(x, depth + 1) end
            if #parts == 0 and getmetatable(v) == nil and next(v) == nil then return "{}" end
            return "[" .. concat(parts, ",") .. "]"
        end
        local fields = {}
        for _, k in ipairs(sorted_keys(v)) do fields[#fields + 1] = { k, literal_json(v[k], depth + 1) } end
        return jobj(fields)
    end
    return "null"
end

-- What a schema too big to satisfy gets, by its type.
local SMALL_VALUE = { object = "{}", array = "[]", string = '""', number = "0", integer = "0",
    boolean = "false", null = "null" }

local gen_nodes = 0 -- values made by the current instance_json call (a bound on work)
local GEN_MAX_NODES = 20000

local function generate(root, s, depth, variant, hint)
    s = resolve(root, s)
    gen_nodes = gen_nodes + 1
    step(1)
    spend(1)
    if depth > 24 or gen_nodes > GEN_MAX_NODES then return "null" end
    s = fold_all_of(root, s)
    if s.const ~= nil then
        local text = literal_json(s.const, 0)
        spend(#text)
        return text
    end
    if type(s.enum) == "table" and s.enum[1] ~= nil then
        local n = #s.enum
        local text = literal_json(s.enum[(variant - 1) % n + 1], 0)
        spend(#text)
        return text
    end
    for _, key in ipairs({ "anyOf", "oneOf" }) do
        if type(s[key]) == "table" and s[key][1] ~= nil then
            local pick = s[key][1]
            for _, alt in ipairs(s[key]) do -- prefer a branch that is not just null
                local r = resolve(root, alt)
                if r.type ~= "null" then pick = alt break end
            end
            local merged = { allOf = { pick } } -- the branch, with the rest of this schema
            for k, v in pairs(s) do
                if k ~= key then merged[k] = v end
            end
            return generate(root, fold_all_of(root, merged), depth + 1, variant, hint)
        end
    end
    local t = first_type(s.type, s)
    if t == "object" then
        local props = type(s.properties) == "table" and s.properties or {}
        local fields, seen = {}, {}
        local function add(k)
            if type(k) == "string" and not seen[k] then
                seen[k] = true
                spend(#k + 4)
                local ps = props[k]
                if ps == nil and type(s.additionalProperties) == "table" then ps = s.additionalProperties end
                fields[#fields + 1] = { k, generate(root, ps == nil and {} or ps, depth + 1, variant, k) }
            end
        end
        if type(s.required) == "table" then
            for _, k in ipairs(s.required) do add(k) end
        end
        local minp = num(s.minProperties) or 0
        if #fields < minp then
            for _, k in ipairs(sorted_keys(props)) do
                if #fields >= minp then break end
                add(k)
            end
        end
        if #fields < minp and type(s.patternProperties) == "table" then
            for _, pat in ipairs(sorted_keys(s.patternProperties)) do
                if #fields >= minp then break end
                local k = gen_pattern(pat, 0)
                if k and k ~= "" and not seen[k] then
                    seen[k] = true
                    fields[#fields + 1] = { k, generate(root, s.patternProperties[pat], depth + 1, variant, k) }
                end
            end
        end
        while #fields < minp and #fields < 64 and s.additionalProperties ~= false do
            local k = "field" .. (#fields + 1)
            seen[k] = true
            local ps = type(s.additionalProperties) == "table" and s.additionalProperties or {}
            fields[#fields + 1] = { k, generate(root, ps, depth + 1, variant, k) }
        end
        return jobj(fields)
    elseif t == "array" then
        local n = num(s.minItems) or 0
        local maxn = num(s.maxItems)
        local tuple = type(s.prefixItems) == "table" and s.prefixItems
            or (type(s.items) == "table" and s.items[1] ~= nil and s.items) or nil
        if tuple and n < #tuple and (not maxn or #tuple <= maxn) then n = #tuple end
        if maxn and n > maxn then n = maxn end
        local items = {}
        for i = 1, math.min(n, 64) do
            local is = tuple and tuple[i]
            if is == nil then
                is = tuple and (s.prefixItems and s.items or s.additionalItems) or s.items
            end
            if type(is) ~= "table" then is = {} end
            items[i] = generate(root, is, depth + 1, s.uniqueItems and i or 1, hint)
        end
        return "[" .. concat(items, ",") .. "]"
    elseif t == "integer" or t == "number" then
        return gen_number(s, t == "integer", variant)
    elseif t == "boolean" then
        return variant % 2 == 1 and "false" or "true"
    elseif t == "null" then
        return "null"
    end
    local h = type(hint) == "string" and find(hint, "^[%w_%-]+$") and #hint <= 24 and hint or nil
    return jstr(gen_string(s, variant, h and ("example " .. h) or nil))
end

--- A plausible instance of any JSON Schema, as JSON text: required properties, the first
-- enum or const value, `format` samples (date, date-time, email, uuid, uri ...), strings built
-- to match simple patterns (`\S`, `^[0-9]{4}$`, classes, groups, quantifiers) and to fit
-- min/maxLength, numbers within their bounds, arrays of minItems (distinct when uniqueItems).
-- Best effort: a schema it cannot satisfy still gets an answer, never an error. Bounded: at
-- most 64 KiB of generated text and 1e6 steps of schema work per call (nested pattern
-- quantifiers, $ref/allOf/anyOf fan-out); a schema that needs more gets a small value of its
-- type ("", 0, [], {} ...) that its validator rejects. Keyword values that are not numbers
-- ("minLength": "9") are ignored.
-- @tparam table schema decoded JSON Schema
-- @treturn string JSON text
function _M.instance_json(schema)
    gen_nodes, gen_left, gen_steps = 0, GEN_BUDGET, 0
    local ok, text = pcall(generate, schema, schema, 0, 1, nil)
    if ok and type(text) == "string" then return text end
    if text == GIVE_UP then -- too big to satisfy: a small value of the schema's type
        local t = type(schema) == "table" and first_type(schema.type, schema) or "object"
        return SMALL_VALUE[t] or "{}"
    end
    return "{}"
end

return _M
