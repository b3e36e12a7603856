--- A contract's JSON Schema compiled to a GBNF grammar (llama.cpp's grammar format, sent in
-- llama-server's `grammar` field), by jsoncontract itself.
--
-- The grammar is never wider than the schema where it claims to express a keyword: every text
-- it admits is JSON the schema gate accepts for the keywords it expresses. Where it cannot say
-- what the schema says, it says less or more and lists the keyword (`unexpressed`): "wider"
-- (the grammar admits values the schema refuses: the local gate catches them) or "narrower"
-- (the grammar refuses some values the schema admits: the model cannot give them).
--
-- Expressed: `type` (one or a list), `const`, `enum` (each value checked against its siblings,
-- so `pattern` beside `enum` keeps only the matching values), objects (`properties`, `required`,
-- `additionalProperties: false`; members in the prompt's property order), arrays (`items`,
-- `prefixItems`, `minItems`, `maxItems`), `anyOf` and nullable unions (siblings merged into each
-- branch), `oneOf` with branches of distinct types, `allOf` of parts without shared keywords,
-- local `$ref` (recursion too), strings (`minLength`, `maxLength`, `pattern` in the ECMA-262
-- subset below, formats date, time, date-time, uuid, email, ipv4, hostname), integers
-- (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`: the exact range, as decimal
-- digit ranges), numbers between integer bounds (decimals, exactly), booleans, null.
--
-- Patterns: literals, `.`, classes `[...]` (ranges, negation, `\d\w\s` inside), escapes
-- `\d \D \w \W \s \S \t \n \r \f \v \xHH \uHHHH` and escaped punctuation, quantifiers
-- `? * + {m} {m,} {m,n}` (lazy forms: the same language), groups `(...)` and `(?:...)`,
-- alternation, and `^`/`$` around the whole pattern (an unanchored pattern may have any text
-- around it, as JSON Schema's `pattern` searches). Anything else (backreferences, lookaround,
-- `\b`, anchors inside) is not expressed and listed.
--
-- Narrower by design (the grammar never admits what the gate refuses here): strings given a
-- pattern, format or a negated class never hold `"`, `\` or control characters (a JSON escape
-- would be needed) and `\s` in a class writes only ASCII white space; a bounded number is
-- written without exponent, and a fractional or exclusive bound is taken inward to the next
-- integer (listed "narrower"); an object admits no members beyond `properties`
-- (listed "narrower" unless `additionalProperties` is false); numbers have at most 16 integer
-- digits, 15 fraction digits and a two-digit exponent; dates admit no 29 February; times no
-- leap second; formats admit plain lower-case forms only. `maxLength`/`maxItems` above
-- `MAX_LENGTH` are left to the gate (listed "wider").
-- @module jsoncontract.providers.gbnf
local core = require "jsoncontract.core"
local json = require "jsoncontract.json"

local type, pairs, ipairs, tostring, tonumber, pcall, error, setmetatable, next =
    type, pairs, ipairs, tostring, tonumber, pcall, error, setmetatable, next
local concat, sort = table.concat, table.sort
local floor, ceil, huge = math.floor, math.ceil, math.huge
local format, byte, char, rep = string.format, string.byte, string.char, string.rep

local _M = { _VERSION = core._VERSION }

--- Longest `maxLength` written into the grammar (a repetition is unrolled by llama.cpp).
_M.MAX_LENGTH = 1000
--- Widest integer range written as a list of values rather than digit ranges.
_M.MAX_RANGE_LIST = 0
--- Most rules one grammar holds before compile gives up (a schema too big for a grammar).
_M.MAX_RULES = 5000

local PRIMITIVES = {
    space = [[" "?]],
    -- a JSON string character: any but '"', '\' and controls, or an escape (no lone surrogate)
    char = [=[[^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-CefEF] [0-9a-fA-F]{3}]=]
        .. [=[ | [dD] [0-7] [0-9a-fA-F]{2}))]=],
    ["plain-char"] = [=[[^"\\\x00-\x1F\u2028\u2029]]=],
    string = [["\"" char* "\""]],
    integer = [["-"? ("0" | [1-9] [0-9]{0,15})]],
    number = [["-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,2})?]],
    boolean = [["true" | "false"]],
    null = [["null"]],
    value = [[object | array | string | number | boolean | null]],
    object = [["{" space (string space ":" space value space ("," space string space ":" space value space)*)? "}"]],
    array = [["[" space (value space ("," space value space)*)? "]"]],
    -- a calendar date (no 29 February: the year decides it)
    ["date"] = [=[[0-9]{4} "-" ((("0" [13578] | "1" [02]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]))]=]
        .. [=[ | (("0" [469] | "11") "-" ("0" [1-9] | [12] [0-9] | "30"))]=]
        .. [=[ | ("02-" ("0" [1-9] | "1" [0-9] | "2" [0-8])))]=],
    -- RFC 3339 full-time (no leap second)
    ["time"] = [=[([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})?]=]
        .. [=[ ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])]=],
    ["uuid"] = [=[[0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12}]=],
    -- a plain address: a dot-atom local part and a host of letters and digits
    ["email"] = [=[[a-z0-9]{1,20} ("." [a-z0-9]{1,20})? "@" [a-z] [a-z0-9]{0,19}]=]
        .. [=[ ("." [a-z] [a-z0-9]{0,19})? "." [a-z]{1,8}]=],
    ["ipv4"] = [=[ipv4-octet "." ipv4-octet "." ipv4-octet "." ipv4-octet]=],
    ["ipv4-octet"] = [=["25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9]]=],
    ["hostname"] = [=[[a-z] [a-z0-9]{0,19} ("." [a-z] [a-z0-9]{0,19}){0,3}]=],
}
local PRIM_DEPS = {
    char = {}, ["plain-char"] = {}, space = {}, string = { "char" }, integer = {}, number = {},
    boolean = {}, null = {}, value = { "object", "array", "string", "number", "boolean", "null" },
    object = { "space", "string", "value" }, array = { "space", "value" },
    date = {}, time = {}, uuid = {}, email = {}, ipv4 = { "ipv4-octet" }, ["ipv4-octet"] = {},
    hostname = {},
}
local FORMATS = { date = "date", time = "time", ["date-time"] = true, uuid = "uuid", email = "email",
    ipv4 = "ipv4", hostname = "hostname" }

-- Keywords that say nothing about which values are valid.
local ANNOTATION = { title = true, description = true, default = true, examples = true, ["$comment"] = true,
    ["$schema"] = true, ["$id"] = true, ["$defs"] = true, definitions = true, deprecated = true,
    readOnly = true, writeOnly = true, ["$anchor"] = true, contentMediaType = true, contentEncoding = true }


local ALL_TYPES = { "object", "array", "string", "number", "boolean", "null" }

-- A GBNF string literal for the bytes of `s` (UTF-8 passes as it is).
local function lit(s)
    return '"' .. s:gsub('[%c"\\]', function(c)
        if c == '"' then return '\\"' elseif c == "\\" then return "\\\\" end
        return format("\\x%02X", byte(c))
    end) .. '"'
end
_M.literal = lit

local escape_token, ptr_join = json.unescape_token, json.join

-- The members' order of the grammar: the prompt's (`jsoncontract.json.property_order`), then
-- required names without a property schema (any value).
local function property_order(schema)
    local props = type(schema.properties) == "table" and schema.properties or {}
    local order = json.property_order(schema)
    local seen = {}
    for _, name in ipairs(order) do seen[name] = true end
    -- required names without a property schema: any value
    if type(schema.required) == "table" then
        for _, name in ipairs(schema.required) do
            if type(name) == "string" and not seen[name] and props[name] == nil then
                seen[name] = true
                order[#order + 1] = name
            end
        end
    end
    return order
end

--- The members' order in an object the grammar writes: `required` first in its order (or the
-- author's order when the schema keeps one), then the rest sorted.
-- @function property_order
-- @tparam table schema an object schema
-- @treturn {string,...}
_M.property_order = property_order

------------------------------------------------------------------------------
-- Integer ranges as digit grammars
------------------------------------------------------------------------------

-- Digits of two same-length decimal strings x <= y: a GBNF expression for every number
-- between them with that many digits.
local function same_len(x, y)
    local n = #x
    if n == 0 then return "" end
    local x1, y1 = x:sub(1, 1), y:sub(1, 1)
    if n == 1 then return x1 == y1 and lit(x1) or format("[%s-%s]", x1, y1) end
    local xr, yr = x:sub(2), y:sub(2)
    if x1 == y1 then return lit(x1) .. " " .. same_len(xr, yr) end
    local zeros, nines = rep("0", n - 1), rep("9", n - 1)
    local any = format("[0-9]{%d}", n - 1)
    if xr == zeros and yr == nines then return format("[%s-%s] %s", x1, y1, any) end
    local alts = {}
    if xr == zeros then
        alts[#alts + 1] = format("[%s-%s] %s", x1, char(byte(y1) - 1), any)
    else
        alts[#alts + 1] = lit(x1) .. " (" .. same_len(xr, nines) .. ")"
        if byte(y1) - byte(x1) > 1 then
            alts[#alts + 1] = format("[%s-%s] %s", char(byte(x1) + 1), char(byte(y1) - 1), any)
        end
    end
    if yr == nines then
        alts[#alts + 1] = lit(y1) .. " " .. any
    else
        alts[#alts + 1] = lit(y1) .. " (" .. same_len(zeros, yr) .. ")"
    end
    return "(" .. concat(alts, " | ") .. ")"
end

-- Every integer in [a, b] (0 <= a, b may be huge), as decimal without leading zeros.
local function nonneg_range(a, b)
    local alts = {}
    local sa = format("%d", a)
    local top = b == huge and #sa or #format("%d", b)
    for len = #sa, top do
        local lo = len == 1 and 0 or 10 ^ (len - 1)
        local hi = 10 ^ len - 1
        if lo < a then lo = a end
        if b ~= huge and hi > b then hi = b end
        if lo <= hi then alts[#alts + 1] = same_len(format("%d", lo), format("%d", hi)) end
    end
    if b == huge then alts[#alts + 1] = format("[1-9] [0-9]{%d,}", #sa) end
    if #alts == 0 then return nil end
    return "(" .. concat(alts, " | ") .. ")"
end

--- Every integer in [lo, hi] in decimal without leading zeros ("-0" too when 0 is in range),
-- as a GBNF expression (nil for an empty range). `lo`, `hi`: whole numbers with |x| < 2^53, or -huge / huge.
-- @tparam number lo
-- @tparam number hi
-- @treturn string|nil
function _M.integer_range(lo, hi)
    if lo > hi then return nil end
    local alts = {}
    if hi >= 0 then alts[#alts + 1] = nonneg_range(lo > 0 and lo or 0, hi) end
    if lo < 0 then
        local neg = nonneg_range(hi < -1 and -hi or 1, lo == -huge and huge or -lo)
        if neg then alts[#alts + 1] = '"-" ' .. neg end
    end
    -- "-0" is 0 too
    if lo <= 0 and hi >= 0 then alts[#alts + 1] = '"-0"' end
    if #alts == 0 then return nil end
    return #alts == 1 and alts[1] or "(" .. concat(alts, " | ") .. ")"
end

------------------------------------------------------------------------------
-- Patterns (ECMA-262 subset) as string-content grammars
------------------------------------------------------------------------------

-- A JSON string character for one code point in a class, or nil when it needs an escape.
local function class_char(cp)
    if cp < 0x20 or cp == 0x22 or cp == 0x5C then return nil end
    if cp == 0x7F then return "\\x7F" end
    local c = utf8 and utf8.char and utf8.char(cp) or (cp < 128 and char(cp) or nil)
    if c == nil then return format("\\u%04X", cp) end
    if c == "]" or c == "[" or c == "\\" or c == "^" or c == "-" or c == '"' then return "\\" .. c end
    if cp >= 0x80 then return format(cp > 0xFFFF and "\\U%08X" or "\\u%04X", cp) end
    return c
end

-- The JSON escapes a class can hold besides plain characters (code point -> JSON text).
local JSON_ESC = { [0x22] = '\\"', [0x5C] = "\\\\", [0x0A] = "\\n", [0x0D] = "\\r", [0x09] = "\\t",
    [0x08] = "\\b", [0x0C] = "\\f" }

-- A class as ranges of code points {{lo, hi}, ...}, negated or not, to a GBNF expression over
-- JSON string text.
local function class_expr(ranges, negated)
    if negated then
        local parts = { '"', "\\\\", "\\x00-\\x1F", "\\u2028\\u2029" }
        for _, r in ipairs(ranges) do
            local lo, hi = r[1], r[2]
            if hi >= 0x20 then
                if lo < 0x20 then lo = 0x20 end
                local a, b = class_char(lo), class_char(hi)
                if a and b then
                    parts[#parts + 1] = lo == hi and a or (a .. "-" .. b)
                elseif lo ~= hi then
                    -- a range over '"' or '\': split around them
                    local cur = lo
                    for _, bad in ipairs { 0x22, 0x5C } do
                        if cur <= bad and bad <= hi then
                            if cur < bad then parts[#parts + 1] = class_char(cur) .. "-" .. class_char(bad - 1) end
                            cur = bad + 1
                        end
                    end
                    if cur <= hi then parts[#parts + 1] = class_char(cur) .. "-" .. class_char(hi) end
                end
            end
        end
        return "[^" .. concat(parts) .. "]"
    end
    local parts, alts = {}, {}
    for _, r in ipairs(ranges) do
        local lo, hi = r[1], r[2]
        for cp, esc in pairs(JSON_ESC) do
            if lo <= cp and cp <= hi then alts[#alts + 1] = lit(esc) end
        end
        -- plain part: split around control characters, '"' and '\'
        local cur = lo < 0x20 and 0x20 or lo
        for _, bad in ipairs { 0x22, 0x5C } do
            if cur <= bad and bad <= hi then
                if cur < bad then
                    parts[#parts + 1] = class_char(cur) .. (bad - 1 > cur and "-" .. class_char(bad - 1) or "")
                end
                cur = bad + 1
            end
        end
        if cur <= hi then parts[#parts + 1] = class_char(cur) .. (hi > cur and "-" .. class_char(hi) or "") end
    end
    sort(alts)
    if #parts > 0 then table.insert(alts, 1, "[" .. concat(parts) .. "]") end
    if #alts == 0 then return nil end
    return #alts == 1 and alts[1] or "(" .. concat(alts, " | ") .. ")"
end

local D = { { 0x30, 0x39 } }
local W = { { 0x30, 0x39 }, { 0x41, 0x5A }, { 0x5F, 0x5F }, { 0x61, 0x7A } }
-- \s: ECMA-262 WhiteSpace and LineTerminator (what the core's matcher takes). A class that
-- admits it writes only the ASCII ones (no JSON escape needed beyond \t \n \r \f: the rest
-- is left out, which is narrower); a class that excludes it excludes all of them.
local S = { { 0x20, 0x20 }, { 0x09, 0x0D } }
local S_ALL = { { 0x09, 0x0D }, { 0x20, 0x20 }, { 0xA0, 0xA0 }, { 0x1680, 0x1680 }, { 0x2000, 0x200A },
    { 0x2028, 0x2029 }, { 0x202F, 0x202F }, { 0x205F, 0x205F }, { 0x3000, 0x3000 }, { 0xFEFF, 0xFEFF } }
local SHORTHAND = { d = { D, false }, D = { D, true }, w = { W, false }, W = { W, true },
    s = { S, false, all = S_ALL }, S = { S_ALL, true } }
-- Unicode general categories a pattern may name with \p{..} / \P{..}: the small fixed ones
-- (Unicode 15: Cc, and the separators Z = Zs + Zl + Zp).
local ZS = { { 0x20, 0x20 }, { 0xA0, 0xA0 }, { 0x1680, 0x1680 }, { 0x2000, 0x200A }, { 0x202F, 0x202F },
    { 0x205F, 0x205F }, { 0x3000, 0x3000 } }
local PROPERTY = {
    Cc = { { 0x00, 0x1F }, { 0x7F, 0x9F } },
    Zs = ZS, Zl = { { 0x2028, 0x2028 } }, Zp = { { 0x2029, 0x2029 } },
    Z = { ZS[1], ZS[2], ZS[3], ZS[4], { 0x2028, 0x2029 }, ZS[5], ZS[6], ZS[7] },
}
local SIMPLE_ESC = { t = 0x09, n = 0x0A, r = 0x0D, f = 0x0C, v = 0x0B, ["0"] = 0 }

-- Decode one UTF-8 code point of `p` at `i`: cp, next index.
local function utf8_at(p, i)
    local c = byte(p, i)
    if c < 0x80 then return c, i + 1 end
    local n = c >= 0xF0 and 3 or c >= 0xE0 and 2 or 1
    local cp = c % (2 ^ (6 - n))
    for k = 1, n do cp = cp * 64 + (byte(p, i + k) or 0x80) % 64 end
    return floor(cp), i + n + 1
end

-- Parse a pattern into a GBNF expression over JSON string text. Returns expr or nil, why.
local function pattern_expr(p)
    local i, n = 1, #p
    local anchored_start, anchored_end = false, false
    if p:sub(1, 1) == "^" then anchored_start, i = true, 2 end
    if n >= i and p:sub(n, n) == "$" and p:sub(n - 1, n - 1) ~= "\\" then anchored_end, n = true, n - 1 end
    local fail
    local function bad(why) fail = fail or why return nil end
    local alternation

    local function escape_in()
        -- at p[i] == "\\": returns {ranges, negated} or a single code point
        local c = p:sub(i + 1, i + 1)
        if c == "" then return bad("a trailing backslash") end
        i = i + 2
        if SHORTHAND[c] then return SHORTHAND[c] end
        if SIMPLE_ESC[c] then return SIMPLE_ESC[c] end
        if c == "x" then
            local h = p:match("^%x%x", i)
            if not h then return bad("\\x without two hex digits") end
            i = i + 2
            return tonumber(h, 16)
        end
        if c == "u" then
            local h = p:match("^%x%x%x%x", i)
            if not h then return bad("\\u without four hex digits") end
            i = i + 4
            local cp = tonumber(h, 16)
            if cp >= 0xD800 and cp <= 0xDFFF then return bad("a surrogate escape") end
            return cp
        end
        if (c == "p" or c == "P") and p:sub(i, i) == "{" then
            local name = p:match("^{(%w+)}", i)
            local set = name and PROPERTY[name]
            if not set then return bad("\\" .. c .. "{" .. tostring(name) .. "} is not in the subset expressed") end
            i = i + #name + 2
            return { set, c == "P" }
        end
        if c:match("[%p]") then return byte(c) end
        return bad("\\" .. c .. " is not in the subset expressed")
    end

    local function class()
        -- at p[i] == "["
        i = i + 1
        local negated = false
        if p:sub(i, i) == "^" then negated, i = true, i + 1 end
        local ranges, first = {}, true
        while true do
            if i > n then return bad("an unclosed class") end
            local c = p:sub(i, i)
            if c == "]" and not first then i = i + 1 break end
            first = false
            local lo
            if c == "\\" then
                local e = escape_in()
                if e == nil then return nil end
                if type(e) == "table" then
                    if e[2] then return bad("a negated shorthand inside a class") end
                    for _, r in ipairs(negated and e.all or e[1]) do ranges[#ranges + 1] = r end
                else
                    lo = e
                end
            elseif c == "[" then
                return bad("a nested class")
            else
                lo, i = utf8_at(p, i)
            end
            if lo then
                local hi = lo
                if p:sub(i, i) == "-" and i + 1 <= n and p:sub(i + 1, i + 1) ~= "]" then
                    i = i + 1
                    if p:sub(i, i) == "\\" then
                        local e = escape_in()
                        if type(e) ~= "number" then return bad("a class range to a shorthand") end
                        hi = e
                    else
                        hi, i = utf8_at(p, i)
                    end
                    if hi < lo then return bad("a class range out of order") end
                end
                ranges[#ranges + 1] = { lo, hi }
            end
        end
        local e = class_expr(ranges, negated)
        if not e then return bad("a class no JSON string character matches") end
        return e
    end

    local function atom()
        local c = p:sub(i, i)
        if c == "(" then
            i = i + 1
            if p:sub(i, i + 1) == "?:" then
                i = i + 2
            elseif p:sub(i, i) == "?" then
                return bad("lookaround or a named group")
            end
            local inner = alternation()
            if inner == nil then return nil end
            if p:sub(i, i) ~= ")" then return bad("an unclosed group") end
            i = i + 1
            return "(" .. inner .. ")"
        elseif c == "[" then
            return class()
        elseif c == "." then
            i = i + 1
            return "plain-char"
        elseif c == "\\" then
            local e = escape_in()
            if e == nil then return nil end
            if type(e) == "table" then return class_expr(e[1], e[2]) end
            return class_expr({ { e, e } }, false) or bad("a character no JSON string holds")
        elseif c == "^" or c == "$" then
            return bad("an anchor inside the pattern")
        elseif c == "*" or c == "+" or c == "?" or c == "{" then
            return bad("a quantifier with nothing before it")
        else
            local cp
            cp, i = utf8_at(p, i)
            return class_expr({ { cp, cp } }, false) or bad("a character no JSON string holds")
        end
    end

    local function quantified()
        local a = atom()
        if a == nil then return nil end
        local c = p:sub(i, i)
        local q
        if c == "*" or c == "+" or c == "?" then
            q, i = c, i + 1
        elseif c == "{" then
            local m, rest = p:match("^{(%d+)(,?%d*)}", i)
            if m then
                i = i + #m + #rest + 2
                if rest == "" then
                    q = "{" .. m .. "}"
                elseif rest == "," then
                    q = "{" .. m .. ",}"
                else
                    local hi = tonumber(rest:sub(2))
                    if hi < tonumber(m) then return bad("a quantifier {m,n} with n < m") end
                    q = "{" .. m .. "," .. hi .. "}"
                end
                local top = (rest ~= "" and rest ~= ",") and tonumber(rest:sub(2)) or 0
                if tonumber(m) > _M.MAX_LENGTH or top > _M.MAX_LENGTH then
                    return bad("a repetition count over " .. _M.MAX_LENGTH)
                end
            end
        end
        if q then
            if p:sub(i, i) == "?" then i = i + 1 end -- lazy: the same language
            local c2 = p:sub(i, i)
            if c2 == "*" or c2 == "+" or c2 == "?" or (c2 == "{" and p:match("^{%d", i)) then
                return bad("a possessive or double quantifier")
            end
            return "(" .. a .. ")" .. q
        end
        return a
    end

    local function sequence()
        local items = {}
        while i <= n do
            local c = p:sub(i, i)
            if c == "|" or c == ")" then break end
            local q = quantified()
            if q == nil then return nil end
            items[#items + 1] = q
        end
        return #items == 0 and '""' or concat(items, " ")
    end

    function alternation()
        local alts = {}
        repeat
            local s = sequence()
            if s == nil then return nil end
            alts[#alts + 1] = s
            if p:sub(i, i) ~= "|" then break end
            i = i + 1
        until false
        return #alts == 1 and alts[1] or concat(alts, " | ")
    end

    local body = alternation()
    if body == nil or fail then return nil, fail or "not expressed" end
    if i <= n then return nil, "an unmatched ')'" end
    -- JSON Schema's pattern searches: an unanchored side may hold any text
    body = (anchored_start and "" or "char* ") .. "(" .. body .. ")" .. (anchored_end and "" or " char*")
    return body
end

--- A pattern (the ECMA-262 subset above) as a GBNF expression for the JSON text inside the
-- quotes of a string that matches it.
-- @tparam string pattern
-- @treturn[1] string expression (refers to the rules `char` and `plain-char`)
-- @return[2] nil
-- @treturn[2] string why it is not expressed
function _M.pattern(pattern)
    if type(pattern) ~= "string" then return nil, "pattern is not a string" end
    local ok, e, why = pcall(pattern_expr, pattern)
    if not ok then return nil, "not expressed (" .. tostring(e) .. ")" end
    return e, why
end

------------------------------------------------------------------------------
-- The compiler
------------------------------------------------------------------------------

local function is_int(v) return type(v) == "number" and v == floor(v) and v > -2 ^ 53 and v < 2 ^ 53 end

--- Compile a schema to a GBNF grammar.
-- @tparam table|boolean schema a JSON Schema (draft 2020-12), as a contract holds it
-- @treturn[1] string grammar text, with the start rule `root`
-- @treturn[1] table unexpressed: array of `{schema_pointer = string, keyword = string, action =
--   "wider"|"narrower", reason = string}` (JSON Pointers into `schema`), empty when the grammar says
--   exactly what the schema says
-- @return[2] nil
-- @treturn[2] string why no grammar can be made (a `false` schema, a grammar over `MAX_RULES`)
-- @usage local g, unexpressed = gbnf.compile(contract.schema)
function _M.compile(schema)
    if type(schema) ~= "table" and type(schema) ~= "boolean" then
        error("schema must be a table or a boolean, got " .. type(schema), 2)
    end
    if schema == false then return nil, "the schema admits no value" end
    local rules, order, used = {}, {}, {}
    local unexpressed = setmetatable({}, core.array_mt)
    local listed = {}
    local names = {}
    local ref_rules = {}
    local count = 0

    local function note(pointer, keyword, action, reason)
        local key = pointer .. "\0" .. keyword
        if listed[key] then return end
        listed[key] = true
        unexpressed[#unexpressed + 1] = { schema_pointer = pointer, keyword = keyword, action = action,
            reason = reason }
    end
    -- The local $ref targets inside a subschema the grammar leaves to the gate: the gate's
    -- errors there name the target's place, so it is listed too.
    local function note_refs(value, why)
        local seen, budget = {}, 2000
        local function walk(v, d)
            if type(v) ~= "table" or d > 16 or seen[v] or budget <= 0 then return end
            seen[v], budget = true, budget - 1
            if type(v["$ref"]) == "string" and v["$ref"]:sub(1, 1) == "#" then
                note(v["$ref"]:sub(2), "$ref", "wider", why)
            end
            for _, sub in pairs(v) do walk(sub, d + 1) end
        end
        walk(value, 0)
    end

    local function use(prim)
        if used[prim] then return prim end
        used[prim] = true
        for _, d in ipairs(PRIM_DEPS[prim] or {}) do use(d) end
        return prim
    end
    -- Where a keyword of `s` is: a branch merged with the keywords beside its union (or a $ref
    -- target with the keywords beside the $ref) reports them at their own place.
    local origin = setmetatable({}, { __mode = "k" })
    local function at(s, ptr, kw)
        local o = origin[s]
        return o and o[kw] or ptr .. "/" .. kw
    end

    -- A keyword of `s` the grammar leaves to the schema gate.
    local function left(s, ptr, kw, why)
        note(at(s, ptr, kw), kw, "wider", why)
    end

    local function new_rule(hint, body)
        count = count + 1
        if count > _M.MAX_RULES then error({ too_big = true }) end
        local base = hint:gsub("[^%w]+", "-"):gsub("^-+", ""):gsub("-+$", ""):lower()
        if base == "" then base = "r" end
        base = base:sub(1, 40)
        local name = base
        local k = 1
        while names[name] or PRIMITIVES[name] do
            k = k + 1
            name = base .. "-" .. k
        end
        names[name] = true
        order[#order + 1] = name
        rules[name] = body
        return name
    end

    local function resolve_ref(ref)
        if type(ref) ~= "string" or ref:sub(1, 1) ~= "#" then return nil end
        local node = schema
        for token in ref:sub(2):gmatch("/([^/]*)") do
            token = escape_token(token:gsub("%%(%x%x)", function(h) return char(tonumber(h, 16)) end))
            if type(node) ~= "table" then return nil end
            local v = node[token]
            if v == nil and tonumber(token) then v = node[tonumber(token) + 1] end
            node = v
        end
        return node
    end

    local node -- below

    -- enum/const values kept: those the rest of the node admits (checked by a validator of the
    -- node alone; a node with $refs is checked by type only)
    local function admitted(values, s, ptr, keyword)
        local rest = {}
        for k, v in pairs(s) do if k ~= "enum" and k ~= "const" then rest[k] = v end end
        if keyword == "enum" and s.const ~= nil then rest.const = s.const end
        local ok, validator = pcall(core.compile, rest)
        local out = {}
        for _, v in ipairs(values) do
            local keep = true
            if ok then
                keep = validator:validate(v) and true or false
            elseif rest.type ~= nil then
                note(ptr, keyword, "wider", "the values are not checked against the keywords beside them")
            end
            if keep then out[#out + 1] = v end
        end
        return out
    end

    local function value_lit(v)
        return lit(core.encode(v))
    end

    local function string_node(s, ptr)
        local minl = is_int(s.minLength) and s.minLength > 0 and s.minLength or 0
        local maxl = is_int(s.maxLength) and s.maxLength or nil
        local fmt = s.format
        local pat = s.pattern
        local content
        local function lengths(why)
            for _, kw in ipairs { "minLength", "maxLength" } do
                if s[kw] ~= nil then left(s, ptr, kw, why) end
            end
        end
        if type(fmt) == "string" and FORMATS[fmt] then
            if fmt == "date-time" then
                content = use("date") .. ' "T" ' .. use("time")
            else
                content = use(FORMATS[fmt])
            end
            if pat ~= nil then left(s, ptr, "pattern", "a pattern beside a format is left to the schema gate") end
            lengths("a length beside a format is left to the schema gate")
        elseif type(fmt) == "string" and not ANNOTATION[fmt] then
            left(s, ptr, "format", "format " .. fmt .. " is not expressed: left to the schema gate")
        end
        if content == nil and pat ~= nil then
            local e, why = _M.pattern(pat)
            if e then
                use("char")
                use("plain-char")
                content = e
                lengths("a length beside a pattern is left to the schema gate")
            else
                left(s, ptr, "pattern", "pattern not expressed: " .. tostring(why))
            end
        end
        if content == nil then
            use("char")
            if maxl and maxl > _M.MAX_LENGTH then
                left(s, ptr, "maxLength", "maxLength over " .. _M.MAX_LENGTH .. " is left to the schema gate")
                maxl = nil
            end
            if maxl and maxl < minl then return nil end
            if maxl then
                content = format("char{%d,%d}", minl, maxl)
            elseif minl > 0 then
                content = format("char{%d,}", minl)
            else
                content = "char*"
            end
        end
        return '"\\"" ' .. content .. ' "\\""'
    end

    -- The integer bounds [lo, hi] of a number or integer schema (a fractional or exclusive bound
    -- taken inward to the next integer); `tight` is set when that left out valid numbers (a
    -- fraction between the bound and that integer).
    local function int_bounds(s, ptr)
        local lo, hi, tight = -huge, huge, false
        local function bound(kw, v, is_lower, exclusive)
            if type(v) ~= "number" then return end
            if v ~= v or v == huge or v == -huge or v <= -2 ^ 53 or v >= 2 ^ 53 then
                left(s, ptr, kw, kw .. " beyond 2^53 is left to the schema gate")
                return
            end
            if exclusive or v ~= floor(v) then tight = tight or kw end
            if is_lower then
                local b = exclusive and floor(v) + 1 or ceil(v)
                if b > lo then lo = b end
            else
                local b = exclusive and ceil(v) - 1 or floor(v)
                if b < hi then hi = b end
            end
        end
        bound("minimum", s.minimum, true, false)
        bound("exclusiveMinimum", s.exclusiveMinimum, true, true)
        bound("maximum", s.maximum, false, false)
        bound("exclusiveMaximum", s.exclusiveMaximum, false, true)
        if s.multipleOf ~= nil then left(s, ptr, "multipleOf", "multipleOf is left to the schema gate") end
        return lo, hi, tight
    end

    local function integer_node(s, ptr)
        local lo, hi = int_bounds(s, ptr)
        if lo == -huge and hi == huge then return use("integer") end
        return _M.integer_range(lo, hi)
    end

    -- A bounded number: decimals without exponent between integer bounds, exactly. Magnitudes
    -- in [a, b] (0 <= a <= b, b may be huge): an integer part below b with any fraction, or b
    -- with a zero fraction.
    local FRAC, ZERO = '("." [0-9]{1,15})?', '("." "0"{1,15})?'
    local function magnitudes(a, b)
        if b == huge then return "(" .. nonneg_range(a, huge) .. ") " .. FRAC end
        local alts = {}
        if b - 1 >= a then alts[#alts + 1] = "(" .. nonneg_range(a, b - 1) .. ") " .. FRAC end
        alts[#alts + 1] = lit(format("%d", b)) .. " " .. ZERO
        return #alts == 1 and alts[1] or "(" .. concat(alts, " | ") .. ")"
    end

    local function number_node(s, ptr)
        local bounded = s.minimum ~= nil or s.maximum ~= nil or s.exclusiveMinimum ~= nil or s.exclusiveMaximum ~= nil
        if not bounded then
            if s.multipleOf ~= nil then left(s, ptr, "multipleOf", "multipleOf is left to the schema gate") end
            return use("number")
        end
        local lo, hi, tight = int_bounds(s, ptr)
        if lo > hi then
            -- no integer between the bounds: the grammar says number, the gate the bounds
            for _, kw in ipairs { "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum" } do
                if s[kw] ~= nil then
                    left(s, ptr, kw, "bounds with no integer between them are left to the schema gate")
                end
            end
            return use("number")
        end
        if tight then
            note(at(s, ptr, tight), tight, "narrower", "the grammar's bound is the next integer inward: "
                .. "numbers between it and " .. tight .. " are not written")
        end
        if lo == -huge and hi == huge then return use("number") end
        local alts = {}
        if hi >= 0 then alts[#alts + 1] = magnitudes(lo > 0 and lo or 0, hi) end
        if lo < 0 then alts[#alts + 1] = '"-" ' .. magnitudes(hi < 0 and -hi or 0, lo == -huge and huge or -lo) end
        return #alts == 1 and alts[1] or "(" .. concat(alts, " | ") .. ")"
    end

    local function object_node(s, ptr, hint)
        use("space")
        local props = type(s.properties) == "table" and s.properties or {}
        local required = {}
        if type(s.required) == "table" then
            for _, r in ipairs(s.required) do if type(r) == "string" then required[r] = true end end
        end
        for _, kw in ipairs { "patternProperties", "propertyNames", "minProperties", "maxProperties",
            "dependentRequired", "dependentSchemas", "unevaluatedProperties", "dependencies" } do
            if s[kw] ~= nil then left(s, ptr, kw, kw .. " is left to the schema gate") end
        end
        if s.additionalProperties ~= false then
            note(ptr .. (s.additionalProperties ~= nil and "/additionalProperties" or ""), "additionalProperties",
                "narrower", "the grammar admits no members beyond properties")
        end
        local members = {}
        for _, name in ipairs(property_order(s)) do
            local sub = props[name]
            if sub == false then
                if required[name] then return nil end
            else
                local o = origin[s]
                local pptr = o and o["properties/" .. name] or ptr_join(ptr_join(ptr, "properties"), name)
                local v = sub == nil and use("value") or node(sub, pptr, hint .. "-" .. name)
                if v == nil then
                    if required[name] then return nil end
                else
                    members[#members + 1] = { lit(core.encode(name)) .. ' space ":" space ' .. v .. " space",
                        required[name] }
                end
            end
        end
        if #members == 0 then return '"{" space "}"' end
        -- S(i, first): the members from i on; `first`: no member written yet (no comma before)
        local srule = {}
        local function suffix(i, first)
            if i > #members then return nil end
            local key = i .. (first and "f" or "n")
            if srule[key] then return srule[key] end
            local m = members[i]
            local lead = first and "" or '"," space '
            local next_n = suffix(i + 1, false)
            local with = lead .. m[1] .. (next_n and " " .. next_n or "")
            local body
            if m[2] then
                body = with
            else
                local skip = suffix(i + 1, first)
                body = "(" .. with .. ")" .. (skip and " | " .. skip or " | \"\"")
            end
            -- small bodies stay inline; others get a rule (the optional chain stays linear)
            local name = new_rule(hint .. "-m" .. i .. (first and "" or "c"), body)
            srule[key] = name
            return name
        end
        return '"{" space ' .. suffix(1, true) .. ' "}"'
    end

    local function array_node(s, ptr, hint)
        use("space")
        for _, kw in ipairs { "uniqueItems", "contains", "minContains", "maxContains", "unevaluatedItems" } do
            if s[kw] ~= nil and s[kw] ~= false then left(s, ptr, kw, kw .. " is left to the schema gate") end
        end
        local minI = is_int(s.minItems) and s.minItems or 0
        local maxI = is_int(s.maxItems) and s.maxItems or nil
        if maxI and maxI > _M.MAX_LENGTH then
            left(s, ptr, "maxItems", "maxItems over " .. _M.MAX_LENGTH .. " is left to the schema gate")
            maxI = nil
        end
        if minI > _M.MAX_LENGTH then
            left(s, ptr, "minItems", "minItems over " .. _M.MAX_LENGTH .. " is left to the schema gate")
            minI = 0
        end
        if maxI and maxI < minI then return nil end
        local prefix = {}
        local prefix_items, items, items_at = s.prefixItems, s.items, "/items"
        if type(items) == "table" and items[1] ~= nil then
            -- the older tuple form: items as a list, additionalItems for the rest
            prefix_items, items, items_at = items, s.additionalItems, "/additionalItems"
        end
        if type(prefix_items) == "table" then
            for k, sub in ipairs(prefix_items) do
                local at_k = ptr_join(ptr .. (items_at == "/items" and "/prefixItems" or "/items"), k - 1)
                local e = node(sub, at_k, hint .. "-p" .. k)
                if e == nil then break end
                prefix[#prefix + 1] = e
            end
        end
        local item
        if items == false then
            item = nil
        elseif items == nil or items == true then
            item = use("value")
        else
            item = node(items, ptr .. items_at, hint .. "-item")
        end
        local item_rule = item and (item:match("^[%w%-]+$") and item or new_rule(hint .. "-item", item))
        -- the prefix: each element present in order; a shorter array ends after any of them
        local k = #prefix
        if maxI and k > maxI then k = maxI end
        local parts = {}
        local function elem(e, i) return (i > 1 and '"," space ' or "") .. e .. " space" end
        -- the tail after k prefix elements: items repeated, counts kept in [minI - k, maxI - k]
        local tail
        if item_rule then
            local tmin = minI - k > 0 and minI - k or 0
            local tmax = maxI and maxI - k or nil
            local first = k == 0 and (item_rule .. " space") or ('"," space ' .. item_rule .. " space")
            local more = '"," space ' .. item_rule .. " space"
            if tmax == 0 then
                tail = nil
            elseif tmin == 0 then
                local rest = tmax and (tmax - 1 > 0 and format("(%s){0,%d}", more, tmax - 1) or "")
                    or format("(%s)*", more)
                tail = "(" .. first .. (rest ~= "" and " " .. rest or "") .. ")?"
            else
                local rest = tmax and format("(%s){%d,%d}", more, tmin - 1, tmax - 1)
                    or format("(%s){%d,}", more, tmin - 1)
                tail = first .. " " .. rest
            end
        elseif minI > k then
            return nil
        end
        -- nested optional prefix: p1 (p2 (p3 tail?)?)? with the required ones (index <= minI) not optional
        local expr = tail or ""
        for i = k, 1, -1 do
            local inner = elem(prefix[i], i) .. (expr ~= "" and " " .. expr or "")
            if i > minI then inner = "(" .. inner .. ")?" end
            expr = inner
        end
        parts[#parts + 1] = '"[" space'
        if expr ~= "" then parts[#parts + 1] = expr end
        parts[#parts + 1] = '"]"'
        return concat(parts, " ")
    end

    local function typed(s, t, ptr, hint)
        if t == "string" then return string_node(s, ptr) end
        if t == "integer" then return integer_node(s, ptr) end
        if t == "number" then return number_node(s, ptr) end
        if t == "boolean" then return use("boolean") end
        if t == "null" then return use("null") end
        if t == "object" then return object_node(s, ptr, hint) end
        if t == "array" then return array_node(s, ptr, hint) end
        return nil
    end

    -- The keywords of `s` other than `skip`'s, merged into `branch` (nil when both hold one).
    local function merged(s, branch, skip, s_ptr)
        if type(branch) ~= "table" then return nil end
        local out = {}
        for k, v in pairs(branch) do out[k] = v end
        local from = {}
        if s_ptr then origin[out] = from end
        for k, v in pairs(s) do
            if not skip[k] and not ANNOTATION[k] then
                if s_ptr then from[k] = at(s, s_ptr, k) end
                if out[k] == nil then
                    out[k] = v
                    if s_ptr and k == "properties" and type(v) == "table" then
                        for name in pairs(v) do
                            if type(name) == "string" then
                                from["properties/" .. name] = ptr_join(at(s, s_ptr, "properties"), name)
                            end
                        end
                    end
                elseif k == "required" and type(v) == "table" and type(out[k]) == "table" then
                    local both = {}
                    for _, r in ipairs(out[k]) do both[#both + 1] = r end
                    for _, r in ipairs(v) do both[#both + 1] = r end
                    out[k] = both
                elseif k == "properties" and type(v) == "table" and type(out[k]) == "table" then
                    local both = {}
                    for name, sub in pairs(out[k]) do both[name] = sub end
                    for name, sub in pairs(v) do
                        if both[name] ~= nil then return nil end
                        both[name] = sub
                        if s_ptr then from["properties/" .. name] = ptr_join(at(s, s_ptr, "properties"), name) end
                    end
                    out[k] = both
                else
                    return nil
                end
            end
        end
        -- additionalProperties counts only the properties beside it: a name the other side
        -- brings is not allowed by a closed side
        local sp, bp = type(s.properties) == "table" and s.properties or {}, type(branch.properties) == "table"
            and branch.properties or {}
        local s_ap, b_ap = skip.additionalProperties and nil or s.additionalProperties, branch.additionalProperties
        if (s_ap ~= nil and s_ap ~= false) or (b_ap ~= nil and b_ap ~= false) then
            if next(sp) ~= nil and next(bp) ~= nil and s_ap ~= b_ap then return nil end
        end
        if s_ap == false or b_ap == false then
            local props = {}
            for name, sub in pairs(type(out.properties) == "table" and out.properties or {}) do
                local allowed = (s_ap ~= false or sp[name] ~= nil) and (b_ap ~= false or bp[name] ~= nil)
                props[name] = allowed and sub or false
            end
            out.properties = props
            out.additionalProperties = false
        end
        return out
    end

    local depth = 0
    local expanding = {}
    function node(s, ptr, hint)
        if s == true then return use("value") end
        if s == false then return nil end
        if type(s) ~= "table" then return use("value") end
        depth = depth + 1
        if depth > 64 then error({ too_big = true }) end
        local out
        for _, kw in ipairs { "not", "if", "then", "else" } do
            if s[kw] ~= nil then
                left(s, ptr, kw, kw .. " is left to the schema gate")
                note_refs(s[kw], "reached from " .. kw .. " at " .. (ptr == "" and "the root" or ptr)
                    .. ", left to the schema gate")
            end
        end
        if type(s["$ref"]) == "string" then
            local target = resolve_ref(s["$ref"])
            if target == nil then
                left(s, ptr, "$ref", "a $ref that is not local: any value")
                out = use("value")
            else
                local others = false
                for k in pairs(s) do if k ~= "$ref" and not ANNOTATION[k] then others = true end end
                -- keywords beside $ref apply too: merged into the target, once per ref on the way
                -- down (a recursion through it keeps only the ref)
                local both = others and not expanding[s["$ref"]] and merged(s, target, { ["$ref"] = true }, ptr)
                if both then
                    expanding[s["$ref"]] = true
                    -- (the schema gate reports the target's keywords at the target's place)
                    out = node(both, s["$ref"]:sub(2), hint)
                    expanding[s["$ref"]] = nil
                    depth = depth - 1
                    return out
                end
                if others then left(s, ptr, "$ref", "keywords beside $ref are left to the schema gate") end
                local name = ref_rules[s["$ref"]]
                if not name then
                    name = new_rule("ref-" .. s["$ref"], "")
                    ref_rules[s["$ref"]] = name
                    local body = node(target, s["$ref"]:sub(2), name)
                    rules[name] = body or "[^\\x00-\\U0010FFFF]" -- (matches nothing)
                    if body == nil then
                        note(at(s, ptr, "$ref"), "$ref", "narrower", "the target admits no value the grammar can write")
                    end
                end
                out = name
            end
        elseif s.const ~= nil then
            local vals = admitted({ s.const }, s, ptr, "const")
            out = #vals > 0 and value_lit(vals[1]) or nil
        elseif type(s.enum) == "table" then
            local vals = admitted(s.enum, s, ptr, "enum")
            local alts = {}
            for _, v in ipairs(vals) do alts[#alts + 1] = value_lit(v) end
            out = #alts > 0 and (#alts == 1 and alts[1] or "(" .. concat(alts, " | ") .. ")") or nil
        elseif type(s.allOf) == "table" then
            local acc = {}
            for k, v in pairs(s) do if k ~= "allOf" then acc[k] = v end end
            for _, part in ipairs(s.allOf) do
                acc = merged(acc, part, {}) or nil
                if acc == nil then break end
            end
            if acc == nil then
                left(s, ptr, "allOf", "allOf parts that share keywords are left to the schema gate")
                note_refs(s.allOf, "reached from the allOf at " .. (ptr == "" and "the root" or ptr)
                    .. ", left to the schema gate")
                acc = {}
                for k, v in pairs(s) do if k ~= "allOf" then acc[k] = v end end
            end
            out = node(acc, ptr, hint)
        elseif type(s.anyOf) == "table" or type(s.oneOf) == "table" then
            local kw = type(s.anyOf) == "table" and "anyOf" or "oneOf"
            if type(s.anyOf) == "table" and type(s.oneOf) == "table" then
                left(s, ptr, "oneOf", "oneOf beside anyOf is left to the schema gate")
            end
            local alts, seen_types, overlap = {}, {}, false
            for k, branch in ipairs(s[kw]) do
                local m = merged(s, branch, { anyOf = true, oneOf = true }, ptr)
                if m == nil then
                    -- the keywords beside the union are kept; the branch is not expressed
                    left(s, ptr, kw, "a branch that repeats a keyword beside it is left to the schema gate")
                    note_refs(branch, "reached from the " .. kw .. " at " .. (ptr == "" and "the root" or ptr)
                        .. ", left to the schema gate")
                    m = {}
                    for k2, v2 in pairs(s) do if k2 ~= "anyOf" and k2 ~= "oneOf" then m[k2] = v2 end end
                end
                local bt = type(m) == "table" and m.type
                if kw == "oneOf" then
                    local ts = type(bt) == "string" and { bt } or type(bt) == "table" and bt or nil
                    if not ts then overlap = true end
                    for _, t in ipairs(ts or {}) do
                        local key = (t == "integer") and "number" or t
                        if seen_types[key] then overlap = true end
                        seen_types[key] = true
                    end
                end
                local e = node(m, ptr_join(ptr_join(ptr, kw), k - 1), hint .. "-" .. k)
                if e then alts[#alts + 1] = e end
            end
            if overlap then
                left(s, ptr, "oneOf", "oneOf branches that may overlap: exactly-one is left to the schema gate")
            end
            out = #alts > 0 and (#alts == 1 and alts[1] or "(" .. concat(alts, " | ") .. ")") or nil
        else
            local ts = {}
            if type(s.type) == "string" then
                ts = { s.type }
            elseif type(s.type) == "table" then
                for _, t in ipairs(s.type) do ts[#ts + 1] = t end
            else
                -- no type: every type, each with the keywords that apply to it
                local any_kw = false
                for k in pairs(s) do if not ANNOTATION[k] then any_kw = true end end
                if not any_kw then depth = depth - 1 return use("value") end
                ts = ALL_TYPES
            end
            local has = {}
            for _, t in ipairs(ts) do has[t] = true end
            local alts = {}
            for _, t in ipairs(ts) do
                if not (t == "integer" and has.number) then
                    local e = typed(s, t, ptr, hint)
                    if e then alts[#alts + 1] = e end
                end
            end
            out = #alts > 0 and (#alts == 1 and alts[1] or "(" .. concat(alts, " | ") .. ")") or nil
        end
        depth = depth - 1
        return out
    end

    local ok, root = pcall(node, schema, "", "root")
    if not ok then
        if type(root) == "table" and root.too_big then
            return nil, "the schema needs more than " .. _M.MAX_RULES .. " rules (or nests deeper than 64)"
        end
        error(root, 0)
    end
    if root == nil then return nil, "the schema admits no value the grammar can write" end
    if used.object then
        -- GBNF cannot say "keys differ"; the strict parser refuses a repeated key
        note("", "duplicate keys", "wider", "a free-form object (where any value is allowed) may repeat a key: "
            .. "the format gate refuses it")
    end
    local lines = { "root ::= " .. root .. " space" }
    use("space")
    for _, name in ipairs(order) do lines[#lines + 1] = name .. " ::= " .. rules[name] end
    local prims = {}
    for name in pairs(used) do prims[#prims + 1] = name end
    sort(prims)
    for _, name in ipairs(prims) do lines[#lines + 1] = name .. " ::= " .. PRIMITIVES[name] end
    return concat(lines, "\n") .. "\n", unexpressed
end

return _M
