-- The contract compiled to a GBNF grammar (jsoncontract.providers.gbnf), proven against the
-- contract's own validator: texts sampled from the grammar pass the schema gate except where
-- `compile` lists a keyword as left to it ("wider"), and near-misses (mutations of sampled
-- texts) are judged the same way by the grammar (a GBNF recogniser, spec/support/gbnf.lua)
-- and by the validator.
local core = require "jsoncontract.core"
local gbnf = require "jsoncontract.providers.gbnf"
local G = require "spec.support.gbnf"
local util = require "support.util"

-- JC_GBNF_SEED=N: other draws (the specs use 0; a longer hunt tries more)
local EXTRA_SEED = tonumber(os.getenv("JC_GBNF_SEED") or "") or 0

-- A deterministic draw (the specs repeat): an LCG, 1..n.
local function rng(seed)
    local s = seed
    return function(n)
        s = (s * 1103515245 + 12345) % 2147483648
        return (math.floor(s / 65536) % n) + 1 -- (the high bits: the low ones of an LCG cycle short)
    end
end

-- The value at a JSON Pointer of `schema`.
local function at(schema, pointer)
    local node = schema
    for token in pointer:gmatch("/([^/]*)") do
        if type(node) ~= "table" then return nil end
        token = token:gsub("~1", "/"):gsub("~0", "~")
        local v = node[token]
        if v == nil and tonumber(token) then v = node[tonumber(token) + 1] end
        node = v
    end
    return node
end

-- The places an error at `pointer` may come from: it, and every local $ref target reachable
-- from the subschema there (an error at an anyOf names the anyOf, not the target inside).
local function places(schema, pointer)
    local out, seen, budget = { pointer }, {}, 500
    local function walk(v)
        if type(v) ~= "table" or seen[v] or budget <= 0 then return end
        seen[v], budget = true, budget - 1
        local ref = v["$ref"]
        if type(ref) == "string" and ref:sub(1, 1) == "#" then
            out[#out + 1] = ref:sub(2)
            walk(at(schema, ref:sub(2)))
        end
        for _, sub in pairs(v) do walk(sub) end
    end
    if schema then walk(at(schema, pointer)) end
    return out
end

-- Is every error of a failed check at (or inside, or around) a place listed as "wider"?
local function explained(err, unexpressed, schema)
    if err.kind == "duplicate_key" then
        for _, u in ipairs(unexpressed) do if u.keyword == "duplicate keys" then return true end end
    end
    if not err.errors or #err.errors == 0 then return false end
    for _, e in ipairs(err.errors) do
        local ok = false
        for _, q in ipairs(places(schema, e.schema_pointer or "")) do
            for _, u in ipairs(unexpressed) do
                local p = u.schema_pointer
                if u.action == "wider" and (q == p or q:sub(1, #p + 1) == p .. "/" or p:sub(1, #q + 1) == q .. "/") then
                    ok = true
                    break
                end
            end
            if ok then break end
        end
        if not ok then return false end
    end
    return true
end

-- The JSON tokens of a text: strings (keys too), numbers and literals, with their places.
local function tokens(text)
    local out, i = {}, 1
    while i <= #text do
        local c = text:sub(i, i)
        if c == '"' then
            local j = i + 1
            while text:sub(j, j) ~= '"' do j = j + (text:sub(j, j) == "\\" and 2 or 1) end
            out[#out + 1] = { kind = "string", from = i, to = j }
            i = j + 1
        elseif c:match("[-0-9]") then
            local j = text:find("[^-+.eE0-9]", i) or #text + 1
            out[#out + 1] = { kind = "number", from = i, to = j - 1 }
            i = j
        elseif c:match("[tfn]") then
            local w = text:match("^%a+", i)
            out[#out + 1] = { kind = "literal", from = i, to = i + #w - 1 }
            i = i + #w
        else
            i = i + 1
        end
    end
    return out
end

-- Near-misses of a valid text: one token changed (a string longer, shorter, emptied, of
-- another type; a number moved or of another type; a literal swapped), or a member added.
local function mutants(text, draw, per)
    local out = {}
    local toks = tokens(text)
    local function put(t, s) out[#out + 1] = text:sub(1, t.from - 1) .. s .. text:sub(t.to + 1) end
    for _ = 1, per or 6 do
        if #toks == 0 then break end
        local t = toks[draw(#toks)]
        local body = text:sub(t.from, t.to)
        local k = draw(5)
        if t.kind == "string" then
            local inner = body:sub(2, -2)
            if k == 1 then put(t, '"' .. inner .. 'x"')
            elseif k == 2 and #inner > 0 and not inner:find("\\", 1, true) and inner:byte(-1) < 0x80 then
                put(t, '"' .. inner:sub(1, -2) .. '"')
            elseif k == 3 then put(t, '""')
            elseif k == 4 then put(t, "7")
            else put(t, '"' .. inner .. ' 0"') end
        elseif t.kind == "number" then
            local n = tonumber(body)
            if k == 1 and n and n == math.floor(n) and math.abs(n) < 1e15 then put(t, string.format("%d", n + 1))
            elseif k == 2 and n and n == math.floor(n) and math.abs(n) < 1e15 then put(t, string.format("%d", n - 1))
            elseif k == 3 then put(t, "1.5")
            elseif k == 4 then put(t, '"1"')
            else put(t, "-" .. body:gsub("^%-", "")) end
        else
            local swap = { "true", "false", "null", '"x"', "0" }
            put(t, swap[k])
        end
    end
    local brace = text:find("{", 1, true)
    if brace and not text:sub(brace + 1):match("^%s*}") then
        out[#out + 1] = text:sub(1, brace) .. '"zz_extra":1,' .. text:sub(brace + 1)
    end
    return out
end

-- Sample `n` texts of the grammar of `schema`, check each with `validator`; then their
-- near-misses. Returns counts and the first few disagreements.
local function prove(schema, validator, n, seed, per)
    local grammar, unexpressed = gbnf.compile(schema)
    assert(grammar, unexpressed)
    local rules = G.parse(grammar)
    local draw = rng(seed or 1)
    local r = { samples = 0, valid = 0, unsound = {}, mutants = 0, rejected = 0, agree_reject = 0,
        accepted_invalid = {}, rejected_valid = {}, unexpressed = unexpressed, grammar = grammar }
    local narrower = false
    for _, u in ipairs(unexpressed) do if u.action == "narrower" then narrower = true end end
    for _ = 1, n do
        local text = G.sample(rules, draw)
        if text then
            r.samples = r.samples + 1
            assert(G.recognise(rules, text), "the recogniser refuses a sample of its own grammar: " .. text)
            local ok, err = validator:check(text)
            if ok ~= nil then
                r.valid = r.valid + 1
                for _, m in ipairs(mutants(text, draw, per)) do
                    r.mutants = r.mutants + 1
                    local rec = G.recognise(rules, m)
                    local mok, merr = validator:check(m)
                    if rec and mok == nil and not explained(merr, unexpressed, schema) then
                        r.accepted_invalid[#r.accepted_invalid + 1] = m .. "  <- " .. merr.message
                    elseif not rec then
                        r.rejected = r.rejected + 1
                        if mok == nil then
                            r.agree_reject = r.agree_reject + 1
                        elseif not narrower then
                            r.rejected_valid[#r.rejected_valid + 1] = m
                        end
                    end
                end
            elseif not explained(err, unexpressed, schema) then
                r.unsound[#r.unsound + 1] = text .. "  <- " .. err.message
            end
        end
    end
    return r
end

describe("gbnf: integer ranges", function()
    local cases = { { 0, 0 }, { 1, 12 }, { 7, 1234 }, { -15, 15 }, { -300, -7 }, { 18, 65 }, { 100, 999 },
        { 99, 1001 }, { 5, math.huge }, { -math.huge, -42 }, { -math.huge, 3 }, { 120, math.huge } }
    for _, c in ipairs(cases) do
        it(string.format("[%s, %s] admits exactly the integers in range", tostring(c[1]), tostring(c[2])), function()
            local expr = gbnf.integer_range(c[1], c[2])
            local rules = G.parse("root ::= " .. expr .. "\n")
            local lo = c[1] == -math.huge and -1500 or c[1] - 30
            local hi = c[2] == math.huge and 1500 or c[2] + 30
            local wrong = {}
            for v = lo, hi do
                local want = v >= c[1] and v <= c[2]
                if G.recognise(rules, string.format("%d", v)) ~= want then wrong[#wrong + 1] = v end
            end
            assert.same({}, wrong)
            -- no leading zeros; "-0" is 0
            assert.is_false(G.recognise(rules, "007"))
            assert.equal(c[1] <= 0 and c[2] >= 0, G.recognise(rules, "-0"))
        end)
    end
    it("an empty range has no grammar", function()
        assert.is_nil(gbnf.integer_range(5, 4))
    end)
end)

describe("gbnf: patterns", function()
    local patterns = {
        "^[0-9]{4,6}$", "\\S", "^\\d{4}-\\d{2}-\\d{2}$", "^[A-Z]{2}-\\d+$", "^(?:foo|ba[rz])+$",
        "^a.c$", "colou?r", "^[^,;]{1,5}$", "^\\w+@\\w+\\.com$", "^(ab|cd){2,3}x?$", "^\\s*\\S+\\s*$",
        "^[a-f0-9]{8}$", "^\\x41\\u00e9[-_.]$", "^[\\d\\s]+$", "^x{0}y$", "^\\.\\*$",
        "^[^\\s\\p{Z}\\p{Cc}](?:[^\\p{Cc}]*[^\\s\\p{Z}\\p{Cc}])?$", "^\\P{Cc}+$", "^[\\p{Zs}x]+$",
    }
    for _, p in ipairs(patterns) do
        it("expresses " .. p .. " exactly on its samples and their near-misses", function()
            local schema = { type = "string", pattern = p }
            local r = prove(schema, core.compile(schema), 80, 3 + EXTRA_SEED)
            assert.same({}, r.unexpressed)
            assert.is_true(r.samples >= 60)
            assert.equal(r.samples, r.valid)
            assert.same({}, r.accepted_invalid)
            assert.same({}, r.rejected_valid)
        end)
    end
    local unexpressed = { "^(a)\\1$", "^(?=a)a$", "\\bword", "a^b", "^\\p{L}+$", "^[[:alpha:]]$" }
    for _, p in ipairs(unexpressed) do
        it("lists " .. p .. " as not expressed", function()
            local e, why = gbnf.pattern(p)
            assert.is_nil(e)
            assert.is_string(why)
            local g, list = gbnf.compile { type = "string", pattern = p }
            assert.is_string(g)
            assert.equal(1, #list)
            assert.same({ "/pattern", "pattern", "wider" }, { list[1].schema_pointer, list[1].keyword, list[1].action })
        end)
    end
end)

describe("gbnf: formats, bounds and shapes", function()
    local schemas = {
        date = { type = "string", format = "date" },
        time = { type = "string", format = "time" },
        ["date-time"] = { type = "string", format = "date-time" },
        uuid = { type = "string", format = "uuid" },
        email = { type = "string", format = "email" },
        ipv4 = { type = "string", format = "ipv4" },
        hostname = { type = "string", format = "hostname" },
        lengths = { type = "string", minLength = 2, maxLength = 5 },
        ["integer bounds"] = { type = "integer", minimum = -3, exclusiveMaximum = 250 },
        ["fractional integer bounds"] = { type = "integer", minimum = 0.5, maximum = 7.5 },
        ["number bounds"] = { type = "number", minimum = -5, maximum = 12 },
        ["number lower bound"] = { type = "number", minimum = 3 },
        ["number upper bound"] = { type = "number", maximum = -2 },
        ["nullable union"] = { anyOf = { { type = "string", maxLength = 3 }, { type = "null" } } },
        ["type list"] = { type = { "integer", "null" }, minimum = 10, maximum = 20 },
        ["enum beside pattern"] = { type = "string", enum = { "a1", "b2", "cc" }, pattern = "^[a-z][0-9]$" },
        const = { const = { a = { 1, "x" } } },
        ["array bounds"] = { type = "array", items = { type = "boolean" }, minItems = 2, maxItems = 4 },
        tuple = { type = "array", prefixItems = { { type = "integer" }, { type = "string" } }, items = false,
            minItems = 1 },
        ["closed object"] = { type = "object", additionalProperties = false, required = { "a" },
            properties = { a = { type = "integer" }, b = { type = "string" }, c = { enum = { "x", "y" } } } },
        ["recursive ref"] = { ["$defs"] = { node = { type = "object", additionalProperties = false,
            properties = { v = { type = "integer" }, next = { ["$ref"] = "#/$defs/node" } } } },
            ["$ref"] = "#/$defs/node" },
        ["oneOf of distinct types"] = { oneOf = { { type = "string", minLength = 1 }, { type = "boolean" } } },
    }
    local names = {}
    for name in pairs(schemas) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
        it(name .. ": every sample passes, and near-misses are judged alike", function()
            local schema = schemas[name]
            local r = prove(schema, core.compile(schema, { format_assertion = true }), 120, 5 + EXTRA_SEED)
            assert.same({}, r.unexpressed)
            assert.is_true(r.samples >= 100)
            assert.same({}, r.unsound)
            assert.equal(r.samples, r.valid)
            assert.same({}, r.accepted_invalid)
            assert.same({}, r.rejected_valid)
        end)
    end
    it("lists what it cannot express, with the keyword's place", function()
        local _, list = gbnf.compile { type = "object", properties = {
            n = { type = "number", multipleOf = 3 }, s = { type = "string", format = "uri" },
            a = { type = "array", uniqueItems = true }, x = { ["not"] = { type = "null" } } } }
        local got = {}
        for _, u in ipairs(list) do got[#got + 1] = u.schema_pointer .. " " .. u.keyword .. " " .. u.action end
        table.sort(got)
        assert.same({ " additionalProperties narrower", " duplicate keys wider", "/properties/a/uniqueItems uniqueItems wider",
            "/properties/n/multipleOf multipleOf wider", "/properties/s/format format wider",
            "/properties/x additionalProperties narrower", "/properties/x/not not wider" },
            got)
    end)
    it("says why when no grammar can be made", function()
        local g, why = gbnf.compile(false)
        assert.is_nil(g)
        assert.matches("no value", why)
        assert.is_nil((gbnf.compile { type = "string", minLength = 5, maxLength = 2 }))
    end)
end)

describe("gbnf: the example contracts", function()
    for _, name in ipairs { "support_ticket", "blog_category", "leave_request", "ticket_priority" } do
        it(name .. ": 150 samples pass the contract's schema gate, near-misses judged alike", function()
            local c = dofile("examples/" .. name .. ".lua").contract
            local r = prove(c.schema, c.validator, 150, 11 + EXTRA_SEED)
            -- nothing narrower: a valid near-miss the grammar refuses would count as a disagreement
            for _, u in ipairs(r.unexpressed) do assert.are_not.equal("narrower", u.action) end
            assert.is_true(r.samples >= 140)
            assert.same({}, r.unsound)
            assert.same({}, r.accepted_invalid)
            assert.same({}, r.rejected_valid)
            assert.is_true(r.mutants >= 400)
            assert.is_true(r.agree_reject > 0)
        end)
    end
end)

describe("gbnf: JSONSchemaBench schemas", function()
    local root = util.shared("corpora/jsonschemabench/")
    local f = io.open(root .. "index.json", "rb")
    if f then f:close() else root = nil end
    if not root then
        pending("skipped: the JSONSchemaBench corpus is not here")
        return
    end
    it("samples of every schema the core compiles pass its validator, but where a keyword is listed", function()
        local index = core.decode(assert(io.open(root .. "index.json", "rb")):read("*a"))
        local schemas, grammars, samples, valid, near = 0, 0, 0, 0, 0
        local unsound, accepted_invalid = {}, {}
        for _, e in ipairs(index.schemas) do
            local text = assert(io.open(root .. e.path .. "/schema.json", "rb")):read("*a")
            local ok, validator, schema = pcall(core.compile, text, { format_assertion = true })
            if ok then
                schemas = schemas + 1
                if gbnf.compile(schema) then
                    grammars = grammars + 1
                    local r = prove(schema, validator, 6, #e.path + EXTRA_SEED, 2)
                    samples, valid, near = samples + r.samples, valid + r.valid, near + r.mutants
                    for _, u in ipairs(r.unsound) do unsound[#unsound + 1] = e.path .. ": " .. u end
                    for _, u in ipairs(r.accepted_invalid) do accepted_invalid[#accepted_invalid + 1] = e.path .. ": " .. u end
                end
            end
        end
        assert.is_true(schemas >= 100)
        assert.equal(schemas, grammars)
        assert.is_true(samples >= 600)
        assert.is_true(near >= 1000)
        assert.same({}, unsound)
        assert.same({}, accepted_invalid)
    end)
end)

describe("gbnf: a part that admits no value", function()
    it("is a rule that matches nothing, listed as narrower, and the rest still samples", function()
        local schema = { ["$defs"] = { x = { type = "string", minLength = 3, maxLength = 1 } },
            type = "object", additionalProperties = false, properties = { a = { ["$ref"] = "#/$defs/x" } } }
        local g, list = gbnf.compile(schema)
        assert.same({ { "/properties/a/$ref", "$ref", "narrower" } },
            { { list[1].schema_pointer, list[1].keyword, list[1].action } })
        local rules = G.parse(g)
        local draw, got = rng(2), 0
        for _ = 1, 20 do
            local text = G.sample(rules, draw)
            if text then
                got = got + 1
                assert.truthy(core.compile(schema):check(text))
                assert.is_nil(text:find('"a"', 1, true))
            end
        end
        assert.is_true(got > 0)
        assert.is_false(G.recognise(rules, '{"a":"abcd"}'))
    end)
end)
