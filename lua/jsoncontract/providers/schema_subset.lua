--- Schema subsets: adapt a contract's JSON Schema to what one provider's structured-output
-- mode accepts and enforces, driven by that provider's rules (the data in
-- `jsoncontract.providers.rules.<name>`, every row with its source and the date checked).
--
-- `adapt` walks the schema once and writes the copy that is sent, recording a finding for
-- every place where the copy differs from the contract's schema:
--
-- * `rewritten`: sent in another form with the same meaning, so still enforced (a `$ref` with
--   sibling keywords inlined, `definitions` moved to `$defs`, an `allOf` merged, `\d` written
--   `[0-9]` for a grammar, keywords next to `anyOf` moved into each branch, ...);
-- * `weakened`: sent, but the provider enforces less (`oneOf` as `anyOf`, an optional
--   property made required-and-nullable);
-- * `narrowed`: the provider allows less than the schema (objects closed, exact tuples): every
--   answer is still valid, the model just has fewer choices (an object whose members come from
--   more than its `properties` is not closed, see `members_outside`: a strict mode "fails" on it);
-- * `dropped`: not sent, so not enforced by the provider (still checked locally);
-- * `fails`: the provider would reject the request (HTTP 400) or run without any constraint;
--   the request is then switched to the weaker mode the rules name (`fallback`), and the
--   reason travels with the request (`req.fallback`) into the evidence.
--
-- Limits (counts of properties, nesting, enum sizes, optional and union properties) are
-- counted on the copy before anything is sent.
-- @module jsoncontract.providers.schema_subset
local core = require "jsoncontract.core"
local json = require "jsoncontract.json"

local type, pairs, ipairs, tostring, tonumber, next, setmetatable, getmetatable, error =
    type, pairs, ipairs, tostring, tonumber, next, setmetatable, getmetatable, error
local concat, sort = table.concat, table.sort
local format = string.format

local _M = { _VERSION = core._VERSION }

------------------------------------------------------------------------------
-- Values
------------------------------------------------------------------------------

local is_array, is_object, new_array = json.is_array, json.is_object, json.new_array

-- The `__order` list of an object (decode keep_order / jc.ordered), or nil.
local function order_of(t)
    local m = getmetatable(t)
    if type(m) == "table" and type(m.__order) == "table" then return m.__order end
    return nil
end

-- A new object that keeps the author's member order of `like` (when it has one).
local function new_object(like)
    local o = like and order_of(like)
    if o then return setmetatable({}, { __order = o }) end
    return {}
end

--- Deep copy of a JSON value that keeps array markers and `__order` metatables
-- (`jsoncontract.json.deepcopy`).
-- @function copy
-- @param v any JSON value as decoded or built in Lua
-- @return the copy (shares no value with `v`)
_M.copy = json.deepcopy
local copy = _M.copy

-- The keys of an object in the author's order when stated, the rest sorted.
local function keys_of(t)
    local seen, keys, rest = {}, {}, {}
    local o = order_of(t)
    if o then
        for _, k in ipairs(o) do
            if type(k) == "string" and t[k] ~= nil and not seen[k] then
                seen[k] = true
                keys[#keys + 1] = k
            end
        end
    end
    for k in pairs(t) do
        if not seen[k] then rest[#rest + 1] = k end
    end
    sort(rest, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(rest) do keys[#keys + 1] = k end
    return keys
end
_M.keys_of = keys_of

local function same(a, b)
    if type(a) ~= "table" or type(b) ~= "table" then return a == b end
    for k, v in pairs(a) do
        if not same(v, b[k]) then return false end
    end
    for k in pairs(b) do
        if a[k] == nil then return false end
    end
    return true
end

local esc, unesc = json.escape_token, json.unescape_token

--- Resolve a local JSON Pointer reference ("#", "#/$defs/x", ...) in `root`.
-- @tparam table root
-- @tparam string ref
-- @return the target, or nil when the reference is not local or does not resolve
function _M.resolve(root, ref)
    if type(ref) ~= "string" or ref:sub(1, 1) ~= "#" then return nil end
    if ref == "#" then return root end
    if ref:sub(1, 2) ~= "#/" then return nil end
    local node = root
    for part in (ref:sub(3) .. "/"):gmatch("([^/]*)/") do
        part = unesc(part:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
        if type(node) ~= "table" then return nil end
        if is_array(node) then
            node = node[(tonumber(part) or -1) + 1]
        else
            node = node[part]
        end
        if node == nil then return nil end
    end
    return node
end
local resolve = _M.resolve

------------------------------------------------------------------------------
-- Keyword classes
------------------------------------------------------------------------------

-- Keywords whose value is one subschema, a map of subschemas, or a list of subschemas.
local ONE = { items = true, additionalProperties = true, ["not"] = true,
    contains = true, propertyNames = true, ["if"] = true, ["then"] = true, ["else"] = true,
    unevaluatedItems = true, unevaluatedProperties = true }
local MAP = { properties = true, ["$defs"] = true, definitions = true,
    patternProperties = true, dependentSchemas = true }
local LIST = { anyOf = true, allOf = true, oneOf = true, prefixItems = true }

-- Annotations: no assertion; merging keeps the first (or the sibling's, for $ref).
local ANNOTATION = { title = true, description = true, default = true, examples = true,
    ["$comment"] = true, deprecated = true, readOnly = true, writeOnly = true,
    ["$schema"] = true, ["$id"] = true, ["$anchor"] = true }

-- Keywords that read each other within one schema object: two schemas can be merged into
-- one object only when at most one of them uses a group.
local GROUP = {
    additionalProperties = "obj", patternProperties = "obj", unevaluatedProperties = "obj",
    items = "arr", prefixItems = "arr", unevaluatedItems = "arr", additionalItems = "arr",
    contains = "contains", minContains = "contains", maxContains = "contains",
    ["if"] = "cond", ["then"] = "cond", ["else"] = "cond",
}

--- Merge schema `src` into `dst` when the result means exactly "both hold" (the allOf of the
-- two): keywords of one side only are taken, equal values are kept once, `required` lists are
-- joined, `properties` with distinct names are joined when neither side closes or patterns
-- its object, annotations keep `dst`'s unless `src_wins`. Returns true, or false and the name
-- of the first keyword in conflict (then `dst` may be partly merged: merge into a copy).
-- @tparam table dst
-- @tparam table src
-- @tparam[opt] boolean src_wins annotations of `src` replace those of `dst`
-- @treturn boolean ok
-- @treturn string|nil conflict keyword
function _M.merge(dst, src, src_wins)
    local groups = {}
    for k in pairs(dst) do
        if GROUP[k] then groups[GROUP[k]] = true end
    end
    for _, k in ipairs(keys_of(src)) do
        local v = src[k]
        if GROUP[k] and groups[GROUP[k]] and dst[k] == nil then return false, k end
        if dst[k] == nil then
            dst[k] = copy(v)
        elseif ANNOTATION[k] then
            if src_wins then dst[k] = copy(v) end
        elseif k == "required" and is_array(v) and is_array(dst[k]) then
            local have = {}
            for _, n in ipairs(dst[k]) do have[n] = true end
            for _, n in ipairs(v) do
                if not have[n] then dst[k][#dst[k] + 1] = n; have[n] = true end
            end
        elseif k == "properties" and is_object(v) and is_object(dst[k]) then
            for g in pairs({ obj = true }) do
                if groups[g] then return false, k end
                for gk in pairs(src) do
                    if GROUP[gk] == g then return false, gk end
                end
            end
            for name, sub in pairs(v) do
                if dst[k][name] == nil then
                    dst[k][name] = copy(sub)
                elseif not same(dst[k][name], sub) then
                    return false, k .. "/" .. name
                end
            end
        elseif not same(dst[k], v) then
            return false, k
        end
    end
    return true
end
local merge = _M.merge

------------------------------------------------------------------------------
-- Patterns
------------------------------------------------------------------------------

-- ECMA-262 \s (the regex dialect of JSON Schema) as a class body.
local SPACE_CLASS = " \\t\\n\\r\\x0B\\x0C\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\uFEFF"
local CLASS = { d = "0-9", w = "0-9A-Za-z_", s = SPACE_CLASS }
-- Escapes a GBNF literal or class understands as the regex means them
-- (llama.cpp src/llama-grammar.cpp parse_char: x u U t r n \ " [ ]).
local GBNF_ESCAPE = { t = true, r = true, n = true, ["\\"] = true, ['"'] = true, ["["] = true,
    ["]"] = true, x = true, u = true }
-- Regex metacharacters the converter unescapes itself outside a class.
local META = { ["^"] = true, ["$"] = true, ["."] = true, ["["] = true, ["]"] = true, ["("] = true,
    [")"] = true, ["|"] = true, ["{"] = true, ["}"] = true, ["*"] = true, ["+"] = true, ["?"] = true }

--- Rewrite an ECMA-262 pattern for llama.cpp's JSON-Schema-to-grammar converter, keeping its
-- meaning: `\d`, `\w`, `\s` (and `\D`, `\W`, `\S` outside a class) become classes, escaped
-- punctuation the grammar does not know is written bare (outside a class) or as `\xHH`
-- (inside). Returns the new pattern, or nil and why the grammar cannot enforce it.
-- @tparam string p
-- @treturn[1] string pattern for the grammar (may equal `p`)
-- @return[2] nil
-- @treturn[2] string reason
function _M.grammar_pattern(p)
    if p:sub(1, 1) ~= "^" or p:sub(-1) ~= "$" or p:sub(-2, -2) == "\\" or #p < 2 then
        return nil, "not anchored with ^...$ (the converter fails on it: \"Pattern must start "
            .. "with '^' and end with '$'\")"
    end
    local out, i, n, in_class = {}, 1, #p, false
    while i <= n do
        local c = p:sub(i, i)
        if c == "\\" then
            local d = p:sub(i + 1, i + 1)
            if d == "" then return nil, "ends with a lone backslash" end
            if CLASS[d] then
                out[#out + 1] = in_class and CLASS[d] or ("[" .. CLASS[d] .. "]")
            elseif CLASS[d:lower()] then
                if in_class then
                    return nil, "\\" .. d .. " inside a character class has no grammar form"
                end
                out[#out + 1] = "[^" .. CLASS[d:lower()] .. "]"
            elseif d == "b" or d == "B" then
                return nil, "\\" .. d .. " (word boundary) has no grammar form"
            elseif d:match("%d") and d ~= "0" then
                return nil, "a backreference (\\" .. d .. ") has no grammar form"
            elseif d == "x" or d == "u" then
                out[#out + 1] = "\\" .. d
            elseif GBNF_ESCAPE[d] or (not in_class and META[d]) then
                out[#out + 1] = "\\" .. d
            elseif d:match("%p") then
                out[#out + 1] = in_class and format("\\x%02X", d:byte()) or d
            else
                return nil, "the escape \\" .. d .. " is not understood by the grammar converter"
            end
            i = i + 2
        elseif in_class then
            if c == "]" then in_class = false end
            out[#out + 1] = c
            i = i + 1
        elseif c == "[" then
            in_class = true
            out[#out + 1] = c
            -- a leading ] or ^] is a literal in the class
            if p:sub(i + 1, i + 1) == "^" then out[#out + 1] = "^"; i = i + 1 end
            i = i + 1
        elseif c == "(" and p:sub(i + 1, i + 2) == "?:" then
            -- a non-capturing group is a plain group where nothing refers back (backreferences
            -- fail above); older copies of the converter mishandle "(?:"
            out[#out + 1] = "("
            i = i + 3
        elseif c == "(" and p:sub(i + 1, i + 1) == "?" and p:sub(i + 2, i + 2) ~= ":" then
            return nil, "lookaround and named groups are skipped by the converter (\"Unsupported "
                .. "pattern syntax\"), so the pattern would not be enforced"
        else
            out[#out + 1] = c
            i = i + 1
        end
    end
    return concat(out)
end

--- Why a pattern is beyond a provider's regex subset ("simple regex": no lookaround,
-- backreferences, named groups or word boundaries), or nil. `max_repeat`: the largest
-- `{n,m}` bound accepted (nil: any).
-- @tparam string p
-- @tparam[opt] table rule { no_word_boundary = boolean, max_repeat = integer|nil }
-- @treturn string|nil reason
function _M.simple_pattern_problem(p, rule)
    rule = rule or {}
    if p:find("(?", 1, true) and not p:find("(?:", 1, true) then
        return "lookaround or named groups"
    end
    if p:find("%(%?[^:]") then return "lookaround or named groups" end
    local i = 1
    while i <= #p do
        local c = p:sub(i, i)
        if c == "\\" then
            local d = p:sub(i + 1, i + 1)
            if d:match("[1-9]") or d == "k" then return "a backreference" end
            if rule.no_word_boundary and (d == "b" or d == "B") then return "\\" .. d .. " (word boundary)" end
            i = i + 2
        else
            i = i + 1
        end
    end
    if rule.max_repeat then
        for a, b in p:gmatch("{(%d*),?(%d*)}") do
            local m = math.max(tonumber(a) or 0, tonumber(b) or 0)
            if m > rule.max_repeat then
                return format("a repetition bound %d above %d", m, rule.max_repeat)
            end
        end
    end
    return nil
end

------------------------------------------------------------------------------
-- The walk
------------------------------------------------------------------------------

-- Keywords that apply to one type only, by type (a schema without `type` whose keywords all
-- name one type can be sent with that type).
local IMPLIED = {
    object = { "properties", "additionalProperties", "patternProperties", "minProperties", "maxProperties",
        "propertyNames", "required" },
    array = { "items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains" },
    string = { "pattern", "format", "minLength", "maxLength" },
    number = { "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf" },
}
local IMPLIED_ORDER = { "object", "array", "string", "number" }

local ACTIONS = { rewritten = true, weakened = true, narrowed = true, dropped = true, fails = true }

local function is_object_schema(node)
    local t = node.type
    if t == "object" then return true end
    if is_array(t) then
        for _, x in ipairs(t) do if x == "object" then return true end end
    end
    return t == nil and (node.properties ~= nil or node.additionalProperties ~= nil or node.required ~= nil)
end

-- Make `sub` also accept null (required-and-nullable, for providers that need every property
-- required).
local function nullable(sub)
    if type(sub) ~= "table" then return sub end
    if sub.enum == nil and sub.const == nil and sub["$ref"] == nil and sub.anyOf == nil then
        local t = sub.type
        if type(t) == "string" then
            if t ~= "null" then
                local arr = new_array()
                arr[1], arr[2] = t, "null"
                sub.type = arr
            end
            return sub
        elseif is_array(t) then
            for _, x in ipairs(t) do
                if x == "null" then return sub end
            end
            t[#t + 1] = "null"
            return sub
        end
    end
    local any = new_array()
    any[1], any[2] = sub, { type = "null" }
    return { anyOf = any }
end

-- Subschemas that apply to the whole object they sit in (their members are that object's).
local WHOLE_LIST = { "allOf", "anyOf", "oneOf" }
local WHOLE_ONE = { "if", "then", "else" }

--- Where schema `s`, applied to one object, defines members beyond `names` (the property names a
-- closed copy of that object carries, `count` of them): closing that object forbids those
-- members, and when the contract asks for them no answer it accepts is left to produce. Counted:
-- required names, properties (of parts and branches) and dependentRequired names outside
-- `names`, minProperties above `count`, propertyNames where the object must have a member,
-- patternProperties and a schema for further properties where `count` is 0.
-- Appends `{ pointer, keyword, what }` to `out` for each place (`not` is skipped: what it
-- forbids, a closed object does not need). Local `$ref`s are followed once. Internal.
-- @tparam table s
-- @tparam table names set of property names
-- @tparam integer count
-- @tparam string ptr JSON Pointer of `s`
-- @tparam table root the schema references resolve in
-- @tparam table out
-- @tparam[opt] table seen subschemas visited
-- @treturn table out
function _M.members_outside(s, names, count, ptr, root, out, seen)
    if not is_object(s) then return out end
    seen = seen or {}
    if seen[s] then return out end
    seen[s] = true
    local function found(p, kw, what) out[#out + 1] = { pointer = p, keyword = kw, what = what } end
    if type(s["$ref"]) == "string" then
        local target = resolve(root, s["$ref"])
        local before = #out
        _M.members_outside(target, names, count, ptr, root, out, seen)
        for i = before + 1, #out do
            local c = out[i]
            c.pointer, c.keyword, c.what = ptr .. "/$ref", "$ref", "its target " .. s["$ref"] .. " (at "
                .. c.pointer:sub(#ptr + 1) .. ") " .. c.what
        end
    end
    if is_array(s.required) then
        for _, n in ipairs(s.required) do
            if not names[n] then found(ptr .. "/required", "required", "requires " .. tostring(n)) break end
        end
    end
    if type(s.minProperties) == "number" and s.minProperties > count then
        found(ptr .. "/minProperties", "minProperties", format("asks for at least %d propert%s",
            s.minProperties, s.minProperties == 1 and "y" or "ies"))
    end
    if is_object(s.properties) then
        for _, n in ipairs(keys_of(s.properties)) do
            if not names[n] then found(ptr .. "/properties", "properties", "defines property " .. n) break end
        end
    end
    if is_object(s.dependentRequired) then
        for _, k in ipairs(keys_of(s.dependentRequired)) do
            local list, outside = s.dependentRequired[k], not names[k]
            for _, n in ipairs(is_array(list) and list or {}) do
                if not names[n] then outside = true end
            end
            if outside then
                found(ptr .. "/dependentRequired", "dependentRequired", "names properties beyond them")
                break
            end
        end
    end
    -- names the object must have may be ones propertyNames rejects
    local must = (is_array(s.required) and #s.required > 0)
        or (type(s.minProperties) == "number" and s.minProperties > 0)
    if s.propertyNames ~= nil and s.propertyNames ~= true and must then
        found(ptr .. "/propertyNames", "propertyNames", "constrains the names of members the object must have")
    end
    -- Members by pattern or by a schema for the rest: with no property sent they are all the
    -- object has, and closed it could only be {} (with some sent, closing narrows to those).
    if count == 0 and is_object(s.patternProperties) and next(s.patternProperties) ~= nil then
        found(ptr .. "/patternProperties", "patternProperties", "defines the properties by pattern")
    end
    for _, kw in ipairs({ "additionalProperties", "unevaluatedProperties" }) do
        if count == 0 and is_object(s[kw]) and next(s[kw]) ~= nil then
            found(ptr .. "/" .. kw, kw, "defines the properties by a schema")
        end
    end
    for _, kw in ipairs(WHOLE_LIST) do
        if is_array(s[kw]) then
            for i, b in ipairs(s[kw]) do
                _M.members_outside(b, names, count, ptr .. "/" .. kw .. "/" .. (i - 1), root, out, seen)
            end
        end
    end
    for _, kw in ipairs(WHOLE_ONE) do
        _M.members_outside(s[kw], names, count, ptr .. "/" .. kw, root, out, seen)
    end
    if is_object(s.dependentSchemas) then
        for _, k in ipairs(keys_of(s.dependentSchemas)) do
            _M.members_outside(s.dependentSchemas[k], names, count, ptr .. "/dependentSchemas/" .. esc(k),
                root, out, seen)
        end
    end
    return out
end

local ENUM_TYPE = function(v)
    if v == core.null then return "null" end
    local t = type(v)
    if t == "table" then return is_array(v) and "array" or "object" end
    return t
end

--- For a grammar converter that reads `const` or `enum` instead of every other keyword of the
-- node (llama.cpp's `visit()`): keep only the values the other keywords accept, so the grammar
-- made from the enum alone admits exactly what the node admits. Checked with the core validator;
-- when the other keywords cannot be compiled on their own (a `$ref` into the root, ...), the enum
-- is sent as it is and the keywords next to it are reported "weakened". No value left: "fails"
-- (the contract admits no value there; an empty enum is no grammar). Changes `node`; internal.
-- @tparam table node a copy of a schema node
-- @tparam string ptr its JSON Pointer
-- @tparam table row the rules row (`why`, `source`, `url`)
-- @tparam function add the finding recorder of `adapt`
function _M.enum_first(node, ptr, row, add)
    local has_const, has_enum = node.const ~= nil, is_array(node.enum)
    if not has_const and not has_enum then return end
    local read = has_const and "const" or "enum"
    local rest, names = {}, {}
    for _, k in ipairs(keys_of(node)) do
        if k ~= read and not ANNOTATION[k] and k:sub(1, 1) ~= "$" and k ~= "definitions" then
            rest[k] = node[k]
            names[#names + 1] = k
        end
    end
    if #names == 0 then return end
    local values = has_const and { node.const } or node.enum
    local ok, validator = pcall(core.compile, rest)
    if not ok then
        add(ptr .. "/" .. read, read, "weakened", "the keywords next to it (" .. concat(names, ", ") .. ") are not "
            .. "read and cannot be checked against its values here: " .. row.why, row)
        return
    end
    local keep = new_array()
    for _, v in ipairs(values) do
        if validator:validate(v) == true then keep[#keep + 1] = v end
    end
    if #keep == #values then return end -- every value passes them: the enum alone says it all
    if #keep == 0 then
        add(ptr .. "/" .. read, read, "fails", "no value of " .. read .. " satisfies the keywords next to it ("
            .. concat(names, ", ") .. "): the contract admits no value here, and an empty " .. read
            .. " makes no grammar: " .. row.why, row)
        return
    end
    node.enum = keep
    add(ptr .. "/enum", "enum", "rewritten", format("sent with the %d of %d values the keywords next to it (%s) "
        .. "accept: %s", #keep, #values, concat(names, ", "), row.why), row)
end

-- A bound as the converter reads it (a 64-bit integer): finite and exact in a double.
local EXACT = 2 ^ 53

--- For a grammar converter that reads one lower and one upper bound of an integer (llama.cpp:
-- `minimum` before `exclusiveMinimum`, each cut toward zero): send the bounds as the one inclusive
-- integer `minimum` and `maximum` that admit the same integers (ceil of minimum, floor of
-- exclusiveMinimum + 1, the tighter of the two; likewise above). A bound beyond 2^53 is left out
-- ("dropped"); bounds no integer lies between "fail". Changes `node`; internal.
-- @tparam table node a copy of a schema node with type "integer"
-- @tparam string ptr
-- @tparam table row
-- @tparam function add
function _M.integer_bounds(node, ptr, row, add)
    local function bound(k)
        local v = node[k]
        if v == nil then return nil end
        if type(v) == "number" and v == v and v > -EXACT and v < EXACT then return v end
        add(ptr .. "/" .. k, k, "dropped", "not read as a 64-bit integer by the converter: " .. row.why, row)
        node[k] = nil
        return nil
    end
    local mn, xmn, mx, xmx = bound("minimum"), bound("exclusiveMinimum"), bound("maximum"), bound("exclusiveMaximum")
    local lo, hi
    if mn then lo = math.ceil(mn) end
    if xmn and (lo == nil or math.floor(xmn) + 1 > lo) then lo = math.floor(xmn) + 1 end
    if mx then hi = math.floor(mx) end
    if xmx and (hi == nil or math.ceil(xmx) - 1 < hi) then hi = math.ceil(xmx) - 1 end
    local tighter = function(a, b) return a ~= nil and b ~= nil and a ~= b end
    if xmn == nil and xmx == nil and not tighter(mn, lo) and not tighter(mx, hi) then return end
    if lo and hi and lo > hi then
        add(ptr, "minimum", "fails", format("no integer lies between the bounds (at least %s, at most %s): the "
            .. "contract admits no value here: %s", tostring(lo), tostring(hi), row.why), row)
        return
    end
    for _, k in ipairs({ "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum" }) do
        local v = node[k]
        local low = k:find("inimum") ~= nil
        local to = low and lo or hi
        if v ~= nil and (k:sub(1, 9) == "exclusive" or v ~= to) then
            add(ptr .. "/" .. k, k, "rewritten", format("%s %s sent as %s %s (the same integers): %s", k, tostring(v),
                low and "minimum" or "maximum", tostring(to), row.why), row)
        end
    end
    node.exclusiveMinimum, node.exclusiveMaximum = nil, nil
    node.minimum, node.maximum = lo, hi
end

--- Adapt `schema` to a provider's rules for one mode.
-- @tparam table schema the contract's JSON Schema (never modified)
-- @tparam table rules the mode's rules (see jsoncontract.providers.rules): `name`, `keywords`
--   (set of keywords sent), `formats` (set), and construct rows (`ref_siblings`, `defs_key`,
--   `one_of`, `all_of`, `union_siblings`, `close_objects`, `all_required`, `enum_types`,
--   `const_as_enum`, `pattern`, `typeless`, `root`, `recursion`, `limits`, `grammar`,
--   `strict_false`: the mode enforces nothing, so an object it cannot close is no failure), each a
--   row `{ action = ..., source = string, checked = "YYYY-MM-DD", why = string }`
-- @treturn table result { schema = table (the copy to send), findings = array of {
--   schema_pointer = string (JSON Pointer into `schema`), keyword = string, action =
--   "rewritten"|"weakened"|"narrowed"|"dropped"|"fails", reason = string, source =
--   string|nil }, fails = array (the findings whose action is "fails"), optional = array of
--   pointers made required-and-nullable }
-- @raise when `schema` is not a table or `rules` is not a table with `keywords`
function _M.adapt(schema, rules)
    if type(schema) ~= "table" then error("schema must be a table, got " .. type(schema), 2) end
    if type(rules) ~= "table" or type(rules.keywords) ~= "table" then
        error("rules must be a table with 'keywords'", 2)
    end
    local name = rules.name or "the provider"
    local findings, fails, optional, seen = new_array(), new_array(), {}, {}
    local function add(ptr, kw, action, reason, row)
        if not ACTIONS[action] then error("unknown finding action " .. tostring(action)) end
        local key = ptr .. "\0" .. kw .. "\0" .. action .. "\0" .. reason
        if seen[key] then return end
        seen[key] = true
        local f = { schema_pointer = ptr, keyword = kw, action = action, reason = reason,
            source = row and row.source or nil, url = row and row.url or nil,
            fallback = row and row.fallback or nil }
        findings[#findings + 1] = f
        if action == "fails" then fails[#fails + 1] = f end
        return f
    end
    local root = schema
    -- the draft the schema names: before 2019-09 a $ref's siblings are ignored
    local old_ref_rule = type(schema["$schema"]) == "string" and schema["$schema"]:match("draft%-0[3467]") or nil
    local defs_key = rules.defs_key and rules.defs_key.key
    local inlining = {}
    local orig_ref = setmetatable({}, { __mode = "k" }) -- sent $ref node -> the reference as written
    -- `definitions` sent as `$defs` (a name both use gets "_definitions" appended).
    local renamed = {}
    if defs_key == "$defs" and is_object(schema.definitions) then
        for k in pairs(schema.definitions) do
            renamed[k] = (is_object(schema["$defs"]) and schema["$defs"][k] ~= nil) and k .. "_definitions" or k
        end
    end

    local walk

    -- Subschema-valued keywords, walked.
    local function walk_value(kw, v, ptr, depth)
        if ONE[kw] then
            return walk(v, ptr, depth)
        elseif MAP[kw] and is_object(v) then
            local out = new_object(v)
            for _, k in ipairs(keys_of(v)) do
                out[k] = walk(v[k], ptr .. "/" .. esc(k), depth)
            end
            return out
        elseif LIST[kw] and is_array(v) then
            local out = new_array()
            for i, s in ipairs(v) do out[i] = walk(s, ptr .. "/" .. (i - 1), depth) end
            return out
        end
        return copy(v)
    end

    -- A reference into root `definitions`, rewritten to where they are sent.
    local function moved_ref(ref)
        if type(ref) == "string" and ref:sub(1, 14) == "#/definitions/" then
            local n, rest = ref:sub(15):match("^([^/]*)(.*)$")
            local to = renamed[unesc(n)]
            if to then return "#/$defs/" .. esc(to) .. rest end
        end
        return ref
    end

    walk = function(node, ptr, depth)
        if type(node) ~= "table" then
            if node == true and rules.typeless then
                add(ptr, "true", "fails", "a schema that accepts any value: " .. rules.typeless.why, rules.typeless)
            end
            return node
        end
        node = copy(node)

        -- A $ref with sibling keywords: inline the target under the siblings (openai-python
        -- `_ensure_strict_json_schema` does the same), when the rules say the provider would
        -- reject or ignore the siblings.
        local ref = node["$ref"]
        if type(ref) == "string" and old_ref_rule then
            -- draft-07 and before: keywords next to $ref are ignored (so by the local validator
            -- too); sending them would ask for more than the contract does
            for _, k in ipairs(keys_of(node)) do
                if k ~= "$ref" and k:sub(1, 1) ~= "$" and k ~= "definitions" and not ANNOTATION[k] then
                    add(ptr .. "/" .. esc(k), k, "rewritten", "left out: next to $ref it is ignored in "
                        .. old_ref_rule .. " (JSON Schema), as by the local validator")
                    node[k] = nil
                end
            end
        end
        if type(ref) == "string" and rules.ref_siblings then
            local siblings = false
            for k in pairs(node) do
                if k ~= "$ref" and k:sub(1, 1) ~= "$" then siblings = true end
            end
            local target = resolve(root, ref)
            if siblings and is_object(target) and not inlining[ref] then
                local merged = copy(target)
                merged["$defs"], merged.definitions = nil, nil
                local rest = new_object(node)
                for k, v in pairs(node) do
                    if k ~= "$ref" then rest[k] = v end
                end
                local ok, clash = merge(merged, rest, true)
                if ok then
                    add(ptr, "$ref", "rewritten", "inlined with its sibling keywords: " .. rules.ref_siblings.why,
                        rules.ref_siblings)
                    inlining[ref] = true
                    local out = walk(merged, ptr, depth)
                    inlining[ref] = nil
                    return out
                end
                -- Keep the reference; the conflicting sibling cannot be sent next to it.
                for k in pairs(rest) do
                    if not ANNOTATION[k] then
                        add(ptr .. "/" .. esc(k), k, "dropped", "next to a $ref whose target also sets "
                            .. tostring(clash) .. ": " .. rules.ref_siblings.why, rules.ref_siblings)
                    end
                    node[k] = nil
                end
                for k in pairs(rest) do if ANNOTATION[k] then node[k] = nil end end
            elseif siblings then
                -- not a local object target, or one being inlined already (a cycle)
                for _, k in ipairs(keys_of(node)) do
                    if k ~= "$ref" and k:sub(1, 1) ~= "$" then
                        if not ANNOTATION[k] then
                            add(ptr .. "/" .. esc(k), k, "dropped", "next to a $ref that cannot be inlined: "
                                .. rules.ref_siblings.why, rules.ref_siblings)
                        end
                        node[k] = nil
                    end
                end
            end
        end

        local dropped_all_of = nil
        -- allOf the provider does not take: merge the parts into the node when that keeps the
        -- meaning; pure $ref parts are resolved first.
        if is_array(node.allOf) and not rules.keywords.allOf then
            local merged = copy(node)
            merged.allOf = nil
            local ok, clash = true, nil
            for _, part in ipairs(node.allOf) do
                local p = part
                if is_object(p) and p["$ref"] ~= nil and next(p, next(p)) == nil then
                    p = resolve(root, p["$ref"])
                    if is_object(p) then
                        p = copy(p)
                        p["$defs"], p.definitions = nil, nil
                    end
                end
                if p == true then
                    p = {}
                elseif not is_object(p) then
                    ok, clash = false, "allOf"
                    break
                end
                ok, clash = merge(merged, p)
                if not ok then break end
            end
            if ok then
                add(ptr .. "/allOf", "allOf", "rewritten", "merged into one schema: " .. rules.all_of.why, rules.all_of)
                return walk(merged, ptr, depth)
            end
            add(ptr .. "/allOf", "allOf", "dropped", "cannot be merged into one schema (" .. tostring(clash)
                .. " in conflict): " .. rules.all_of.why, rules.all_of)
            dropped_all_of = node.allOf -- its parts may define the object's members (object rules below)
            node.allOf = nil
        end

        -- Keywords next to anyOf/oneOf that the provider ignores there: move them into each
        -- branch when that keeps the meaning.
        local union = is_array(node.anyOf) and "anyOf" or (is_array(node.oneOf) and "oneOf") or nil
        if union and rules.union_siblings then
            local rest = {}
            for k in pairs(node) do
                if k ~= union and not ANNOTATION[k] and k:sub(1, 1) ~= "$" and k ~= "definitions" then
                    rest[k] = node[k]
                end
            end
            if next(rest) then
                local branches, ok, clash = new_array(), true, nil
                for i, b in ipairs(node[union]) do
                    local nb = b == true and {} or (is_object(b) and copy(b)) or nil
                    if not nb then ok, clash = false, union; break end
                    ok, clash = merge(nb, rest)
                    if not ok then break end
                    branches[i] = nb
                end
                if ok then
                    for k in pairs(rest) do node[k] = nil end
                    node[union] = branches
                    add(ptr .. "/" .. union, union, "rewritten", "keywords next to " .. union
                        .. " moved into each branch: " .. rules.union_siblings.why, rules.union_siblings)
                else
                    for k in pairs(rest) do
                        add(ptr .. "/" .. esc(k), k, "dropped", "next to " .. union .. " and cannot be moved into "
                            .. "its branches (" .. tostring(clash) .. "): " .. rules.union_siblings.why,
                            rules.union_siblings)
                        node[k] = nil
                    end
                end
            end
        end

        -- enum/const values the provider does not take.
        if rules.const_as_enum and node.const ~= nil and not rules.keywords.const then
            local t = ENUM_TYPE(node.const)
            if rules.enum_types and rules.enum_types.types[t] and node.enum == nil then
                local e = new_array()
                e[1] = node.const
                node.enum, node.const = e, nil
                add(ptr .. "/const", "const", "rewritten", "sent as a one-value enum: " .. rules.const_as_enum.why,
                    rules.const_as_enum)
            end
        end
        if rules.enum_types and is_array(node.enum) then
            local bad, nulls, keep = {}, false, new_array()
            for _, v in ipairs(node.enum) do
                local t = ENUM_TYPE(v)
                if rules.enum_types.types[t] then
                    keep[#keep + 1] = v
                elseif t == "null" then
                    nulls = true
                else
                    bad[#bad + 1] = t
                end
            end
            if #bad == 0 and nulls and #keep > 0 and node.anyOf == nil and rules.keywords.anyOf then
                node.enum = nil
                local alt = new_object(node)
                for k, v in pairs(node) do alt[k] = v; node[k] = nil end
                alt.enum = keep
                local any = new_array()
                any[1], any[2] = alt, { type = "null" }
                node.anyOf = any
                add(ptr .. "/enum", "enum", "rewritten", "null taken out as an anyOf branch: "
                    .. rules.enum_types.why, rules.enum_types)
            elseif #bad > 0 or nulls then
                add(ptr .. "/enum", "enum", "dropped", "has " .. concat(bad, ", ")
                    .. (nulls and ((#bad > 0 and ", " or "") .. "null") or "") .. " values: "
                    .. rules.enum_types.why, rules.enum_types)
                node.enum = nil
            end
        end

        -- Grammar converter specifics (llama.cpp and Ollama).
        local g = rules.grammar
        if g and g.enum_first then _M.enum_first(node, ptr, g.enum_first, add) end
        if g and g.integer_bounds and node.type == "integer" then
            _M.integer_bounds(node, ptr, g.integer_bounds, add)
        end
        if g then
            local strish = node.type == "string" or node.type == nil
            -- the converter reads a pattern (or a format it knows) instead of the lengths
            local by = (type(node.pattern) == "string" and _M.grammar_pattern(node.pattern) and "pattern")
                or (type(node.format) == "string" and rules.formats[node.format] and "format") or nil
            if strish and by then
                for _, kw in ipairs({ "minLength", "maxLength" }) do
                    if node[kw] ~= nil then
                        add(ptr .. "/" .. kw, kw, "dropped", "next to " .. by
                            .. ", which the converter uses instead: " .. g.length_next_to_pattern.why,
                            g.length_next_to_pattern)
                        node[kw] = nil
                    end
                end
            end
            if node.type ~= "string" and g.length_needs_type then
                for _, kw in ipairs({ "minLength", "maxLength" }) do
                    if node[kw] ~= nil then
                        add(ptr .. "/" .. kw, kw, "dropped", g.length_needs_type.why, g.length_needs_type)
                        node[kw] = nil
                    end
                end
            end
            if node.type ~= "integer" then
                for _, kw in ipairs({ "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum" }) do
                    if node[kw] ~= nil then
                        add(ptr .. "/" .. kw, kw, "dropped", g.integer_bounds_only.why, g.integer_bounds_only)
                        node[kw] = nil
                    end
                end
            end
            if g.closed_by_default and is_object(node.properties) and node.additionalProperties == nil
                and (node.type == "object" or node.type == nil) then
                add(ptr, "additionalProperties", "narrowed", "no other properties are generated: "
                    .. g.closed_by_default.why, g.closed_by_default)
            end
            if is_array(node.prefixItems) then
                if node.items == false then
                    node.items = nil
                    add(ptr .. "/items", "items", "rewritten", "false next to prefixItems left out (the tuple "
                        .. "grammar has exactly the prefixItems): " .. g.prefix_items.why, g.prefix_items)
                elseif node.items ~= nil then
                    add(ptr .. "/items", "items", "narrowed", "items after the prefixItems are not generated: "
                        .. g.prefix_items.why, g.prefix_items)
                    node.items = nil
                end
                add(ptr .. "/prefixItems", "prefixItems", "narrowed",
                    "the grammar asks for exactly the prefixItems: " .. g.prefix_items.why, g.prefix_items)
                for _, kw in ipairs({ "minItems", "maxItems" }) do
                    if node[kw] ~= nil then
                        add(ptr .. "/" .. kw, kw, "dropped", "next to prefixItems: " .. g.prefix_items.why,
                            g.prefix_items)
                        node[kw] = nil
                    end
                end
            end
        end

        -- items next to a prefixItems the provider does not take: it applies only after the
        -- prefix, and sent alone it would apply to every element (items: false: "the empty array
        -- only", while the contract asks for the prefix). items: false is sent as the length it
        -- allows where maxItems is taken; otherwise items is left out, so the copy admits every
        -- array the contract admits.
        if is_array(node.prefixItems) and not rules.keywords.prefixItems and node.items ~= nil then
            local n = #node.prefixItems
            local why = rules.unsupported and rules.unsupported.prefixItems or rules.keywords_row
            if node.items == false and rules.keywords.maxItems then
                if not (type(node.maxItems) == "number" and node.maxItems <= n) then node.maxItems = n end
                add(ptr .. "/items", "items", "rewritten", format("false next to prefixItems (not sent) sent as "
                    .. "maxItems %d, the length it allows", n), why)
            else
                add(ptr .. "/items", "items", "dropped", "applies only after prefixItems, which is not sent; sent "
                    .. "alone it would ask the same of every element" .. (node.items == false
                    and " (items: false: the empty array only)" or ""), why)
            end
            node.items = nil
        end

        -- Keyword by keyword.
        local out = new_object(node)
        local kept = rules.keywords
        for _, kw in ipairs(keys_of(node)) do
            local v, kptr = node[kw], ptr .. "/" .. esc(kw)
            local row = kept[kw]
            if kw == "oneOf" and rules.one_of and rules.one_of.action == "anyOf" and node.anyOf == nil then
                out.anyOf = walk_value("oneOf", v, kptr, depth)
                add(kptr, kw, "weakened", "sent as anyOf (one match is not checked): " .. rules.one_of.why,
                    rules.one_of)
            elseif kw == "oneOf" and rules.one_of and rules.one_of.action == "as_anyOf" then
                out.oneOf = walk_value("oneOf", v, kptr, depth)
                add(kptr, kw, "weakened", "enforced as anyOf (one match is not checked): " .. rules.one_of.why,
                    rules.one_of)
            elseif kw == "required" or (kw == "additionalProperties" and rules.close_objects) then
                out[kw] = kw == "required" and copy(v) or nil -- object rules below
            elseif kw == "definitions" and defs_key == "$defs" and ptr == "" and is_object(v) then
                out["$defs"] = out["$defs"] or new_object(v)
                for _, k in ipairs(keys_of(v)) do
                    out["$defs"][renamed[k]] = walk(v[k], kptr .. "/" .. esc(k), depth)
                end
                add(kptr, kw, "rewritten", "sent as $defs (references rewritten): " .. rules.defs_key.why,
                    rules.defs_key)
            elseif kw == "$defs" and out["$defs"] then
                local w = walk_value(kw, v, kptr, depth)
                for k, s in pairs(w) do out["$defs"][k] = s end
            elseif kw == "$ref" then
                out[kw] = moved_ref(v)
                orig_ref[out] = v
            elseif not row then
                local why = rules.unsupported and rules.unsupported[kw]
                add(kptr, kw, "dropped", why and why.why or ("not supported by " .. name),
                    why or rules.keywords_row)
            elseif kw == "format" and type(v) == "string" and not rules.formats[v] then
                add(kptr, kw, "dropped", "format " .. v .. " not supported by " .. name, rules.formats_row)
            elseif kw == "pattern" and type(v) == "string" and rules.pattern then
                local pr = rules.pattern
                if pr.action == "grammar" then
                    local np, why = _M.grammar_pattern(v)
                    if np == nil then
                        add(kptr, kw, "dropped", why .. ": " .. pr.why, pr)
                    else
                        if np ~= v then
                            add(kptr, kw, "rewritten", "sent as " .. np .. ": " .. pr.why, pr)
                        end
                        out[kw] = np
                    end
                else
                    local why = _M.simple_pattern_problem(v, pr)
                    if why then
                        add(kptr, kw, "dropped", "uses " .. why .. ": " .. pr.why, pr)
                    else
                        out[kw] = v
                    end
                end
            elseif kw == "items" and is_array(v) then
                add(kptr, kw, "dropped", "tuple form of items not supported by " .. name, rules.keywords_row)
            elseif type(row) == "table" and row.max and type(v) == "number" and v > row.max then
                add(kptr, kw, "dropped", format("%s above %s: %s", kw, tostring(row.max), row.why or ""), row)
            elseif type(row) == "table" and row.values and row.values[v] == nil then
                add(kptr, kw, "dropped", format("%s %s: %s", kw, tostring(v), row.why or ""), row)
            else
                out[kw] = walk_value(kw, v, kptr, depth + ((kw == "properties" or kw == "items") and 1 or 0))
            end
        end

        -- The author's property order, stated where the provider has a keyword for it.
        if rules.property_ordering and is_object(out.properties) and order_of(node.properties or {})
            and out.propertyOrdering == nil then
            local names = new_array()
            for i, n in ipairs(keys_of(out.properties)) do names[i] = n end
            out.propertyOrdering = names
        end

        -- Object rules. Closing an object (additionalProperties: false next to the names in
        -- properties) narrows it only while those names are all its members may need; when
        -- something else defines them (an allOf not merged, a branch, required names without an
        -- entry, minProperties, propertyNames, patternProperties, a schema for further
        -- properties, ...), the closed copy may admit no answer the contract accepts. Such an
        -- object is sent open: a mode that enforces the closing cannot take it ("fails", so the
        -- request falls back), a mode that enforces nothing (`strict_false`) shows it as it is.
        local open
        if is_object_schema(node) and rules.close_objects then
            local names, count = {}, 0
            for n in pairs(is_object(out.properties) and out.properties or {}) do
                names[n] = true
                count = count + 1
            end
            open = _M.members_outside(node, names, count, ptr, root, {})
            if dropped_all_of then
                _M.members_outside({ allOf = dropped_all_of }, names, count, ptr, root, open)
            end
            if #open == 0 then open = nil end
        end
        if open then
            if not rules.strict_false then
                local have = is_object(out.properties) and keys_of(out.properties) or {}
                local list = #have > 0 and concat(have, ", ") or "none"
                for _, c in ipairs(open) do
                    add(c.pointer, c.keyword, "fails", format("%s at %s %s, beyond the names in properties "
                        .. "(%s): closed (%s), the object could admit no answer the contract accepts",
                        c.keyword, c.pointer, c.what, list, rules.close_objects.why), rules.close_objects)
                end
            end
            if node.additionalProperties ~= nil and rules.keywords.additionalProperties then
                out.additionalProperties = walk_value("additionalProperties", node.additionalProperties,
                    ptr .. "/additionalProperties", depth)
            end
            out.required = is_array(node.required) and copy(node.required) or nil
        elseif is_object_schema(node) and rules.close_objects then
            if node.additionalProperties ~= false then
                add(ptr .. "/additionalProperties", "additionalProperties", "narrowed",
                    "set to false: " .. rules.close_objects.why, rules.close_objects)
            end
            out.additionalProperties = false
            local props = is_object(out.properties) and out.properties or {}
            local req, listed = new_array(), {}
            if is_array(node.required) then
                for _, n in ipairs(node.required) do
                    -- a name without an entry made the object open (above)
                    if props[n] ~= nil and not listed[n] then
                        listed[n] = true
                        req[#req + 1] = n
                    end
                end
            end
            if rules.all_required then
                for _, n in ipairs(keys_of(props)) do
                    if not listed[n] then
                        req[#req + 1] = n
                        props[n] = nullable(props[n])
                        local f = add(ptr .. "/properties/" .. esc(n), "required", "weakened",
                            "optional property sent as required and nullable: " .. rules.all_required.why,
                            rules.all_required)
                        if f then f.optional = true end
                        optional[#optional + 1] = ptr .. "/properties/" .. esc(n)
                    end
                end
            end
            out.required = (#req > 0 or rules.all_required) and req or nil
        elseif is_object_schema(node) then
            if node.required ~= nil and not is_array(node.required) then out.required = nil end
        elseif node.required ~= nil then
            out.required = nil
            add(ptr .. "/required", "required", "dropped", "required outside an object schema; not sent")
        end

        -- A node left without any type: the provider rejects it, unless its keywords apply to
        -- one type only, which is then stated (an answer of another type passed the schema
        -- vacuously there; the provider now asks for that type).
        if rules.typeless and out.type == nil and out.anyOf == nil and out["$ref"] == nil
            and out.enum == nil and out.const == nil and out.oneOf == nil and out.allOf == nil then
            local kinds = {}
            for _, k in ipairs(IMPLIED_ORDER) do
                for _, kw in ipairs(IMPLIED[k]) do
                    if out[kw] ~= nil or node[kw] ~= nil then kinds[#kinds + 1] = k break end
                end
            end
            if #kinds == 1 then
                out.type = kinds[1]
                add(ptr, "type", "narrowed", "type " .. kinds[1] .. " stated (its keywords apply to "
                    .. kinds[1] .. " only): " .. rules.typeless.why, rules.typeless)
            else
                add(ptr, "type", "fails", "no type left in the schema sent: " .. rules.typeless.why, rules.typeless)
            end
        end
        return out
    end

    local sent = walk(schema, "", 0)
    -- A $ref whose target is not sent (it sat under a keyword left out): resolve it before
    -- the target is gone, by sending the target in its place (not for a target that refers
    -- to itself: that stays, and fails below).
    _M.each_schema(sent, function(node, ptr)
        local ref = node["$ref"]
        if type(ref) == "string" and ref:sub(1, 1) == "#" and resolve(sent, ref) == nil then
            ref = orig_ref[node] or ref
            local target = resolve(schema, ref)
            if is_object(target) and not core.encode(target, { keep_order = false }):find(
                '"$ref":' .. core.encode(ref), 1, true) then
                local w = walk(target, ptr, 0)
                for k in pairs(node) do node[k] = nil end
                for k, v in pairs(w) do node[k] = v end
                setmetatable(node, getmetatable(w))
                add(ptr, "$ref", "rewritten", "inlined: its target " .. ref .. " is not sent")
            end
        end
    end)
    local rr = rules.grammar and rules.grammar.refs
    if rr then _M.grammar_refs(sent, rr, add) end
    local res = { schema = sent, findings = findings, fails = fails, optional = optional }
    _M.check_shape(sent, rules, add)
    return res
end

--- References as a grammar converter takes them (llama.cpp's `resolve_refs`: "#/..." and
-- "https://..." only): a reference to the root ("#") is sent as a reference to a copy of the
-- root under `$defs` (named by the row's `root_def`, with "_1", "_2", ... when taken), the same
-- recursion under a name the converter resolves; any other form "fails" (HTTP 400). Changes
-- `sent`; internal.
-- @tparam table sent the copy sent
-- @tparam table row the rules row (`root_def`, `why`, `source`, `url`)
-- @tparam function add
function _M.grammar_refs(sent, row, add)
    local roots = {}
    _M.each_schema(sent, function(node, ptr)
        if node["$ref"] == "#" then roots[#roots + 1] = { node = node, ptr = ptr } end
    end)
    if #roots > 0 then
        local defs = is_object(sent["$defs"]) and sent["$defs"] or nil
        local name, i = row.root_def, 0
        while defs and defs[name] ~= nil do
            i = i + 1
            name = row.root_def .. "_" .. i
        end
        local target = "#/$defs/" .. esc(name)
        for _, r in ipairs(roots) do
            r.node["$ref"] = target
            add(r.ptr, "$ref", "rewritten", "the reference to the root (#) sent as " .. target .. ", a copy of "
                .. "the root: " .. row.why, row)
        end
        local def = copy(sent)
        for _, k in ipairs({ "$defs", "definitions", "$schema", "$id", "$anchor" }) do def[k] = nil end
        if not defs then
            defs = new_object()
            sent["$defs"] = defs
        end
        defs[name] = def
        local o = order_of(defs)
        if o then o[#o + 1] = name end
    end
    _M.each_schema(sent, function(node, ptr)
        local ref = node["$ref"]
        if type(ref) == "string" and ref:sub(1, 2) ~= "#/" and ref:sub(1, 8) ~= "https://" then
            add(ptr, "$ref", "fails", "the reference " .. ref .. " is not of a form the converter resolves: "
                .. row.why, row)
        end
    end)
end

--- A lower bound of the length of the grammar llama.cpp's converter writes for `sent`. The
-- converter names each rule by its path ("a-b-c", runs of other characters as "-"): a property
-- at path P costs at least its key-value rule's name and definition, its value rule's name and
-- the parent's reference (4 x #P), its quoted name and punctuation; an enum or const value costs
-- its literal, a pattern about its length. Only paths through `properties` and `items` are
-- counted (others would only add). Internal.
-- @tparam table sent
-- @treturn integer characters
function _M.grammar_size_floor(sent)
    local n = 0
    local function rule(name) return (name:gsub("[^%w%-]+", "-")) end
    local function visit(node, name, depth)
        if type(node) ~= "table" or depth > 200 then return end
        if is_object(node.properties) then
            for k, sub in pairs(node.properties) do
                local p = rule(name == "" and k or (name .. "-" .. k))
                n = n + 4 * #p + #k + 20
                visit(sub, p, depth + 1)
            end
        end
        if type(node.items) == "table" then
            visit(node.items, rule(name == "" and "item" or name .. "-item"), depth + 1)
        end
        for _, v in ipairs(is_array(node.enum) and node.enum or {}) do n = n + #core.encode(v) + 3 end
        if node.const ~= nil then n = n + #core.encode(node.const) + 3 end
        if type(node.pattern) == "string" then n = n + #node.pattern end
    end
    visit(sent, "", 0)
    return n
end

------------------------------------------------------------------------------
-- Whole-schema checks: root, recursion, limits
------------------------------------------------------------------------------

-- Visit every subschema of `s` with its JSON Pointer: fn(node, ptr, parent_kw, parent).
local function each_schema(s, fn, ptr, kw, parent)
    ptr = ptr or ""
    if type(s) ~= "table" then return end
    fn(s, ptr, kw, parent)
    for _, k in ipairs(keys_of(s)) do
        local v = s[k]
        if ONE[k] then
            each_schema(v, fn, ptr .. "/" .. esc(k), k, s)
        elseif MAP[k] and is_object(v) then
            for _, n in ipairs(keys_of(v)) do each_schema(v[n], fn, ptr .. "/" .. esc(k) .. "/" .. esc(n), k, s) end
        elseif LIST[k] and is_array(v) then
            for i, x in ipairs(v) do each_schema(x, fn, ptr .. "/" .. esc(k) .. "/" .. (i - 1), k, s) end
        end
    end
end
_M.each_schema = each_schema

--- The `$ref`s of `schema` that close a cycle (a reference reachable again from its own
-- target), each with whether it sits below a property its object does not require.
-- @tparam table schema
-- @treturn table array of { pointer = string, ref = string, optional_path = boolean }
function _M.cycles(schema)
    local refs = {}
    each_schema(schema, function(node, ptr)
        local ref = node["$ref"]
        if type(ref) == "string" and ref:sub(1, 1) == "#" then
            refs[#refs + 1] = { pointer = ptr, ref = ref, target = ref == "#" and "" or ref:sub(2) }
        end
    end)
    local function within(ptr, base)
        return base == "" or ptr == base or ptr:sub(1, #base + 1) == base .. "/"
    end
    local out = new_array()
    for _, r in ipairs(refs) do
        -- follow references from r's target; a cycle when one leads back to r
        local seen, stack, cyclic = {}, { r }, false
        while #stack > 0 and not cyclic do
            local cur = table.remove(stack)
            for _, r2 in ipairs(refs) do
                if within(r2.pointer, cur.target) then
                    if r2 == r then cyclic = true break end
                    if not seen[r2] then seen[r2] = true; stack[#stack + 1] = r2 end
                end
            end
        end
        if cyclic then
            local opt, node = false, schema
            local parts = {}
            for part in r.pointer:gmatch("/([^/]*)") do parts[#parts + 1] = unesc(part) end
            for i, key in ipairs(parts) do
                if type(node) ~= "table" then break end
                if key == "properties" and parts[i + 1] and is_object(node.properties) then
                    local listed = false
                    if is_array(node.required) then
                        for _, n in ipairs(node.required) do
                            if n == parts[i + 1] then listed = true end
                        end
                    end
                    if not listed then opt = true end
                end
                node = is_array(node) and node[(tonumber(key) or -1) + 1] or node[key]
            end
            out[#out + 1] = { pointer = r.pointer, ref = r.ref, optional_path = opt }
        end
    end
    return out
end

local function count_limits(sent, rules, add)
    local L = rules.limits
    if not L then return end
    local props, chars, enums, depth_max = 0, 0, 0, 0
    local optional, unions = 0, 0
    local function walk_depth(s, depth, ptr)
        if type(s) ~= "table" then return end
        local d = depth
        if is_object_schema(s) and s.properties then
            d = depth + 1
            if d > depth_max then depth_max = d end
        end
        if is_object(s.properties) then
            local req = {}
            if is_array(s.required) then for _, n in ipairs(s.required) do req[n] = true end end
            for _, n in ipairs(keys_of(s.properties)) do
                props = props + 1
                chars = chars + #n
                local p = s.properties[n]
                if not req[n] then optional = optional + 1 end
                if type(p) == "table" and (is_array(p.anyOf) or is_array(p.type)) then unions = unions + 1 end
                walk_depth(p, d, ptr .. "/properties/" .. esc(n))
            end
        end
        for _, dk in ipairs({ "$defs", "definitions" }) do
            if is_object(s[dk]) then
                for _, n in ipairs(keys_of(s[dk])) do
                    chars = chars + #n
                    walk_depth(s[dk][n], 0, ptr .. "/" .. dk .. "/" .. esc(n))
                end
            end
        end
        if is_array(s.enum) then
            enums = enums + #s.enum
            local strlen, n = 0, 0
            for _, v in ipairs(s.enum) do
                if type(v) == "string" then chars = chars + #v; strlen = strlen + #v; n = n + 1 end
            end
            if L.large_enum and n > L.large_enum.over and strlen > L.large_enum.max then
                add(ptr .. "/enum", "enum", "fails", format("%d string values of %d characters in all (more "
                    .. "than %d values allow at most %d): %s", n, strlen, L.large_enum.over, L.large_enum.max,
                    L.large_enum.why), L.large_enum)
            end
        end
        if type(s.const) == "string" then chars = chars + #s.const end
        for _, k in ipairs({ "items", "additionalProperties" }) do
            if type(s[k]) == "table" then walk_depth(s[k], d, ptr .. "/" .. k) end
        end
        for _, k in ipairs({ "anyOf", "oneOf", "allOf", "prefixItems" }) do
            if is_array(s[k]) then
                for i, x in ipairs(s[k]) do walk_depth(x, d, ptr .. "/" .. k .. "/" .. (i - 1)) end
            end
        end
    end
    walk_depth(sent, 0, "")
    local function over(row, n, what)
        if row and n > row.max then
            add("", row.keyword or "properties", "fails", format("%d %s, more than %d: %s", n, what, row.max,
                row.why), row)
        end
    end
    over(L.properties, props, "object properties in all")
    over(L.depth, depth_max, "levels of object nesting")
    over(L.chars, chars, "characters of property names, definition names, enum and const values")
    over(L.enum_values, enums, "enum values in all")
    over(L.optional, optional, "optional properties")
    over(L.unions, unions, "properties with a union type (anyOf or a type list)")
end

--- The whole-schema checks `adapt` runs after the walk: the root shape, recursion, limits.
-- Adds "fails" findings through `add`. Internal.
function _M.check_shape(sent, rules, add)
    -- enum and const strings with characters the provider rejects
    local ec = rules.enum_chars
    if ec then
        each_schema(sent, function(node, ptr)
            local vals = is_array(node.enum) and node.enum or { node.const }
            for _, v in ipairs(vals) do
                local bad = false
                for _, c in ipairs(ec.chars) do
                    if type(v) == "string" and v:find(c, 1, true) then bad = true end
                end
                if bad then
                    add(ptr .. (node.enum and "/enum" or "/const"), node.enum and "enum" or "const", "fails",
                        "a value holds " .. ec.what .. ": " .. ec.why, ec)
                    break
                end
            end
        end)
    end
    -- anyOf branches (objects) must not start with the same property name: put a property
    -- only that branch has first, unless the author stated the branch's order.
    local fk = rules.union_first_keys
    if fk then
        each_schema(sent, function(node, ptr)
            local branches = is_array(node.anyOf) and node.anyOf or nil
            if not branches then return end
            local firsts, owners = {}, {}
            for i, b in ipairs(branches) do
                if is_object(b) and is_object(b.properties) and next(b.properties) ~= nil then
                    local first = keys_of(b.properties)[1]
                    firsts[i] = first
                    owners[first] = (owners[first] or 0) + 1
                end
            end
            for i, b in ipairs(branches) do
                local first = firsts[i]
                if first and owners[first] > 1 then
                    local unique
                    for _, n in ipairs(keys_of(b.properties)) do
                        local elsewhere = false
                        for j, o in ipairs(branches) do
                            if j ~= i and is_object(o) and is_object(o.properties) and o.properties[n] ~= nil then
                                elsewhere = true
                            end
                        end
                        if not elsewhere and not owners[n] then unique = n break end
                    end
                    local bptr = ptr .. "/anyOf/" .. (i - 1)
                    if unique and not order_of(b.properties) then
                        local order = { unique }
                        for _, n in ipairs(keys_of(b.properties)) do
                            if n ~= unique then order[#order + 1] = n end
                        end
                        setmetatable(b.properties, { __order = order })
                        owners[first] = owners[first] - 1
                        owners[unique] = 1
                        add(bptr .. "/properties", "properties", "rewritten", "sent with " .. unique
                            .. " first, since branches of an anyOf must not start with the same property ("
                            .. first .. "): " .. fk.why, fk)
                    else
                        add(bptr .. "/properties", "properties", "fails", "starts with " .. first
                            .. " like another branch of the anyOf" .. (unique and " (the author's order is "
                            .. "kept)" or ", and has no property of its own to start with") .. ": " .. fk.why, fk)
                    end
                end
            end
        end)
    end
    local r = rules.root
    if r then
        -- a root union of objects is an object; its being a union is the second rule
        local union = is_array(sent.anyOf) and sent.anyOf or (is_array(sent.oneOf) and sent.oneOf) or nil
        local objects = union ~= nil and #union > 0
        for _, b in ipairs(union or {}) do
            if type(b) ~= "table" or b.type ~= "object" then objects = false end
        end
        if r.object and sent.type ~= "object" and not objects then
            add("", "type", "fails", "the root is not an object: " .. r.object.why, r.object)
        end
        if r.no_union and (sent.anyOf ~= nil or sent.oneOf ~= nil) then
            add("", sent.anyOf and "anyOf" or "oneOf", "fails", "the root is a union: " .. r.no_union.why, r.no_union)
        end
    end
    local rec = rules.recursion
    if rec then
        for _, c in ipairs(_M.cycles(sent)) do
            if rec.action == "fails" or (rec.action == "fails_if_required" and not c.optional_path) then
                add(c.pointer, "$ref", "fails", "a recursive reference (" .. c.ref .. "): " .. rec.why, rec)
            end
        end
    end
    -- A $ref the copy cannot resolve (its target was dropped or moved): the provider rejects it.
    each_schema(sent, function(node, ptr)
        local ref = node["$ref"]
        if type(ref) == "string" and ref:sub(1, 1) == "#" and resolve(sent, ref) == nil then
            add(ptr, "$ref", "fails", "the reference " .. ref .. " does not resolve in the schema sent "
                .. "(its target is not sent)")
        end
    end)
    count_limits(sent, rules, add)
    -- A grammar longer than the server's buffer is cut (Ollama): known too long, it "fails".
    local gb = rules.grammar_buffer
    if gb then
        local limit = math.max(gb.min, math.min(gb.max, gb.factor * #core.encode(sent)))
        local floor = _M.grammar_size_floor(sent)
        if floor > limit then
            add("", "format", "fails", format("the grammar made from the schema sent is at least %d characters, "
                .. "more than the %d kept: %s", floor, limit, gb.why), gb)
        elseif floor > gb.min then
            -- builds before the buffer grew with the schema cut at gb.min: said, not failed
            add("", "format", "weakened", format("the grammar made from the schema sent is at least %d characters: "
                .. "older builds, which keep %d, cut it: %s", floor, gb.min, gb.why), gb)
        end
    end
end

------------------------------------------------------------------------------
-- A request's plan
------------------------------------------------------------------------------

local NOT_ENFORCED = { dropped = true, weakened = true, fails = true }
-- Weaker modes later: a plan takes the weakest any failing rule asks for.
local STRENGTH = { native = 0, ["native-nonstrict"] = 1, json = 2, prompt = 3 }

--- The findings the provider will not enforce (dropped, weakened, or failing), in order.
-- @tparam table findings as `adapt` returns them
-- @treturn table array
function _M.not_enforced(findings)
    local out = new_array()
    for _, f in ipairs(findings) do
        if NOT_ENFORCED[f.action] then out[#out + 1] = f end
    end
    return out
end

--- The set of names a rules table lists (its keys: keywords or formats, each mapped to the row
-- that documents it), for `if SET[name]` tests.
-- @tparam table rows map name -> row
-- @treturn table map name -> true
function _M.name_set(rows)
    local t = {}
    for k in pairs(rows) do t[k] = true end
    return t
end

--- The findings where the copy sent does not say what the schema says (every action but
-- "rewritten", which keeps the meaning): a request's `dropped` list.
-- @tparam table findings as `adapt` returns them
-- @treturn table array
function _M.changed(findings)
    local out = new_array()
    for _, f in ipairs(findings) do
        if f.action ~= "rewritten" then out[#out + 1] = f end
    end
    return out
end

--- What a native request sends: `adapt`, then, when a finding says the provider would reject
-- the request (or `forced`, a finding made by the caller, e.g. a prefill), the weaker mode to
-- use instead (the weakest any failing row names in `fallback`, else `rules.fallback`).
-- @tparam table schema
-- @tparam table rules the mode's rules
-- @tparam[opt] table forced a finding { schema_pointer, keyword, reason, source, fallback }
--   that forces a fallback whatever the schema
-- @tparam[opt] table instances values the contract accepts (see `instances`): one the copy sent
--   rejects (beyond closing objects) "fails", so a copy that lost the contract's answers is never
--   sent (not checked while optional properties were made required: such a copy is not sent
--   as it is, see jsoncontract.providers.openai)
-- @treturn table plan: the fields of `adapt`'s result, plus `mode` ("native" or the fallback
--   mode), `dropped` (see `changed`; a fallback's finding first, its reason ending in
--   "; sent in mode <mode>"), `fallback` = nil | { from = "native", to = mode, schema_pointer,
--   keyword, reason, source } (for the evidence); `schema` is nil when the mode sends none
function _M.plan(schema, rules, forced, instances)
    local res = _M.adapt(schema, rules)
    if instances and #instances > 0 and res.schema and #res.optional == 0 then
        _M.check_instances(res, instances)
    end
    local fails = {}
    if forced then
        forced.action = "fails"
        fails[1] = forced
        table.insert(res.findings, 1, forced)
    end
    for _, f in ipairs(res.fails) do fails[#fails + 1] = f end
    res.mode = "native"
    if #fails > 0 then
        local to = nil
        for _, f in ipairs(fails) do
            local m = f.fallback or rules.fallback or "prompt"
            if to == nil or STRENGTH[m] > STRENGTH[to] then to = m end
        end
        local f = fails[1]
        res.mode = to
        res.fallback = { from = "native", to = to, schema_pointer = f.schema_pointer, keyword = f.keyword,
            reason = f.reason .. (#fails > 1 and format(" (and %d more)", #fails - 1) or ""), source = f.source,
            url = f.url }
        if to == "json" or to == "prompt" then res.schema = nil end
    end
    res.dropped = _M.changed(res.findings)
    return res
end

--- The values a contract says are valid, for `plan` to check the copy sent against: the
-- outputs of its examples and the values of its schema's root `examples`, each kept only when the
-- contract's own schema accepts it (core validator).
-- @tparam table schema the contract's schema
-- @tparam[opt] table contract with `examples` = array of { input, output }
-- @treturn table array of { value = any, what = string }
function _M.instances(schema, contract)
    local list = {}
    if type(contract) == "table" and type(contract.examples) == "table" then
        for i, ex in ipairs(contract.examples) do
            if type(ex) == "table" and ex.output ~= nil then
                list[#list + 1] = { value = ex.output, what = "example " .. i .. " of the contract" }
            end
        end
    end
    if type(schema) == "table" and is_array(schema.examples) then
        for i, v in ipairs(schema.examples) do list[#list + 1] = { value = v, what = "/examples/" .. (i - 1) } end
    end
    if #list == 0 then return list end
    local ok, validator = pcall(core.compile, schema)
    if not ok then return {} end
    local out = {}
    for _, x in ipairs(list) do
        if validator:validate(x.value) == true then out[#out + 1] = x end
    end
    return out
end

--- Check the copy `res.schema` against values the contract accepts: one it rejects, with the
-- objects it closed opened again (closing narrows on purpose), is a "fails" finding. Internal.
-- @tparam table res as `adapt` returns it (findings and fails appended to)
-- @tparam table instances as `instances` returns them
function _M.check_instances(res, instances)
    local open = copy(res.schema)
    _M.each_schema(open, function(node)
        if node.additionalProperties == false then node.additionalProperties = nil end
    end)
    local ok, validator = pcall(core.compile, open)
    if not ok then return end
    for _, x in ipairs(instances) do
        if validator:validate(x.value) ~= true then
            local f = { schema_pointer = "", keyword = "schema", action = "fails", reason = "the schema sent rejects "
                .. x.what .. ", which the contract accepts: a rewrite lost valid answers, so it is not sent" }
            res.findings[#res.findings + 1] = f
            res.fails[#res.fails + 1] = f
            return
        end
    end
end

--- `fn(contract.schema, contract)`, computed once per contract and `fn`: a contract from
-- `jsoncontract.contract` keeps it in its `provider_plans` (a contract is not changed once made),
-- so the asks and attempts that send one contract through one provider plan its schema once. A
-- plain `{name, schema, prompt}` table has no such slot and gets a fresh result every call.
-- @tparam table contract
-- @tparam function fn function(schema, contract) -> table (never changed by the caller)
-- @treturn table what `fn` returned
function _M.cached(contract, fn)
    local cache = contract.provider_plans
    if type(cache) ~= "table" then return fn(contract.schema, contract) end
    local v = cache[fn]
    if v == nil then
        v = fn(contract.schema, contract)
        cache[fn] = v
    end
    return v
end

--- A provider's schema functions from its rules data row (the mode rules, e.g.
-- `jsoncontract.providers.rules.gemini.native`), so every provider module exposes the same two:
--
-- * `provider_schema(schema)` -> schema_sent, dropped: the copy sent (`adapt`) and the findings
--   where it says less than the schema (`changed`), whatever the mode would be;
-- * `native_schema(schema [, contract])` -> schema_sent|nil, dropped, enforced, mode, plan: what a
--   native request sends for `schema` (and the contract's examples, see `instances`), as lint reads
--   it (`plan`; `enforced` is false when it falls
--   back, `schema_sent` nil when the mode sends none). What the conversation adds (a prefill, a
--   cloud model) is the provider's `build_request`'s business.
--
-- Both raise when `schema` is not a table and never change it. The third, for `build_request`:
--
-- * `contract_plan(contract [, forced])` -> plan: `plan(contract.schema, rules, forced)`, computed
--   once per contract (see `cached`) unless a finding of the conversation `forced` a fallback.
-- @tparam table rules the mode's rules
-- @treturn function provider_schema
-- @treturn function native_schema
-- @treturn function contract_plan
function _M.provider_functions(rules)
    local function native_plan(schema, contract)
        return _M.plan(schema, rules, nil, _M.instances(schema, contract))
    end
    local function contract_plan(contract, forced)
        if forced then return _M.plan(contract.schema, rules, forced, _M.instances(contract.schema, contract)) end
        return _M.cached(contract, native_plan)
    end
    local function provider_schema(schema)
        if type(schema) ~= "table" then error("schema must be a table, got " .. type(schema), 2) end
        local res = _M.adapt(schema, rules)
        return res.schema, _M.changed(res.findings)
    end
    local function native_schema(schema, contract)
        if type(schema) ~= "table" then error("schema must be a table, got " .. type(schema), 2) end
        local plan = _M.plan(schema, rules, nil, _M.instances(schema, contract))
        return plan.schema, plan.dropped, plan.fallback == nil, plan.mode, plan
    end
    return provider_schema, native_schema, contract_plan
end

--- A provider module's schema fields, from its rules module (data with sources, e.g.
-- `jsoncontract.providers.rules.gemini`), so each provider exposes what it enforces the same way:
-- `mod.rules` (the rules module), `mod.SUBSET` (its native mode's rules, `rules.native`),
-- `mod.KEYWORDS` and `mod.FORMATS` (name sets of the keywords and string formats the native mode
-- takes, where the rules list them) and `mod.provider_schema`, `mod.native_schema` (see
-- `provider_functions`).
-- @tparam table mod the provider module
-- @tparam table rules the provider's rules module (with `native`)
-- @treturn function contract_plan (see `provider_functions`), for the module's `build_request`
function _M.provider_fields(mod, rules)
    local native = rules.native
    mod.rules, mod.SUBSET = rules, native
    if native.keywords then mod.KEYWORDS = _M.name_set(native.keywords) end
    if native.formats then mod.FORMATS = _M.name_set(native.formats) end
    local contract_plan
    mod.provider_schema, mod.native_schema, contract_plan = _M.provider_functions(native)
    return contract_plan
end

return _M
