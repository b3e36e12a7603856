-- A small GBNF reader for the specs: parses the grammar text jsoncontract.providers.gbnf writes
-- (rules `name ::= ...`, literals, classes with ranges and negation, escapes \x \u \U \" \\ and
-- \n \r \t, groups, alternation, quantifiers ? * + {m} {m,} {m,n}), then recognises a text
-- (every way it can match, as sets of end positions, memoised per rule and position) or
-- samples texts from it (random choices, bounded depth and repetition).
-- It works on code points (a UTF-8 text is decoded first), as llama.cpp's grammar sampler does.
local M = {}

local utf8_char = utf8 and utf8.char or function(cp)
    if cp < 0x80 then return string.char(cp) end
    if cp < 0x800 then return string.char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64) end
    if cp < 0x10000 then
        return string.char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
    end
    return string.char(0xF0 + math.floor(cp / 262144), 0x80 + math.floor(cp / 4096) % 64,
        0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
end

local function decode_utf8(s)
    local out, i = {}, 1
    while i <= #s do
        local c = s:byte(i)
        local n = c >= 0xF0 and 3 or c >= 0xE0 and 2 or c >= 0xC0 and 1 or 0
        local cp = n == 0 and c or c % (2 ^ (6 - n))
        for k = 1, n do cp = cp * 64 + (s:byte(i + k) or 0x80) % 64 end
        out[#out + 1] = math.floor(cp)
        i = i + n + 1
    end
    return out
end
M.decode_utf8 = decode_utf8

-- Parse -----------------------------------------------------------------------

local ESC = { n = 10, r = 13, t = 9, ['"'] = 34, ["\\"] = 92, ["["] = 91, ["]"] = 93, ["-"] = 45, ["^"] = 94,
    ["/"] = 47 }

function M.parse(text)
    local rules = {}
    local p, i = text, 1
    local function ws()
        while true do
            local s, e = p:find("^[ \t]+", i)
            if s then i = e + 1 end
            if p:sub(i, i) == "#" then
                i = (p:find("\n", i) or #p + 1)
            else
                break
            end
        end
    end
    local function escape()
        -- at "\\"
        local c = p:sub(i + 1, i + 1)
        if c == "x" then local h = p:sub(i + 2, i + 3); i = i + 4; return tonumber(h, 16) end
        if c == "u" then local h = p:sub(i + 2, i + 5); i = i + 6; return tonumber(h, 16) end
        if c == "U" then local h = p:sub(i + 2, i + 9); i = i + 10; return tonumber(h, 16) end
        assert(ESC[c], "unknown escape \\" .. c .. " at " .. i)
        i = i + 2
        return ESC[c]
    end
    local function char_at()
        if p:sub(i, i) == "\\" then return escape() end
        local s = p:sub(i, i + 3)
        local c = s:byte(1)
        local n = c >= 0xF0 and 4 or c >= 0xE0 and 3 or c >= 0xC0 and 2 or 1
        local cp = decode_utf8(p:sub(i, i + n - 1))[1]
        i = i + n
        return cp
    end
    local alternation
    local function primary()
        local c = p:sub(i, i)
        if c == '"' then
            i = i + 1
            local cps = {}
            while p:sub(i, i) ~= '"' do
                assert(i <= #p, "unclosed literal")
                cps[#cps + 1] = char_at()
            end
            i = i + 1
            return { t = "lit", cps = cps }
        elseif c == "[" then
            i = i + 1
            local neg = false
            if p:sub(i, i) == "^" then neg, i = true, i + 1 end
            local ranges = {}
            while p:sub(i, i) ~= "]" do
                assert(i <= #p, "unclosed class")
                local lo = char_at()
                local hi = lo
                if p:sub(i, i) == "-" and p:sub(i + 1, i + 1) ~= "]" then
                    i = i + 1
                    hi = char_at()
                end
                ranges[#ranges + 1] = { lo, hi }
            end
            i = i + 1
            return { t = "class", neg = neg, ranges = ranges }
        elseif c == "(" then
            i = i + 1
            ws()
            local inner = alternation()
            ws()
            assert(p:sub(i, i) == ")", "unclosed group at " .. i)
            i = i + 1
            return inner
        else
            local name = p:match("^[%w%-]+", i)
            assert(name, "unexpected '" .. c .. "' at " .. i .. ": " .. p:sub(i, i + 30))
            i = i + #name
            return { t = "ref", name = name }
        end
    end
    local function item()
        local node = primary()
        while true do
            local c = p:sub(i, i)
            if c == "?" then node, i = { t = "rep", node = node, min = 0, max = 1 }, i + 1
            elseif c == "*" then node, i = { t = "rep", node = node, min = 0 }, i + 1
            elseif c == "+" then node, i = { t = "rep", node = node, min = 1 }, i + 1
            elseif c == "{" then
                local m, comma, n2 = p:match("^{(%d+)(,?)(%d*)}", i)
                assert(m, "bad repetition at " .. i)
                i = i + #m + #comma + #n2 + 2
                local max = comma == "" and tonumber(m) or (n2 ~= "" and tonumber(n2) or nil)
                node = { t = "rep", node = node, min = tonumber(m), max = max }
            else
                break
            end
        end
        return node
    end
    local function sequence()
        local items = {}
        while true do
            ws()
            local c = p:sub(i, i)
            if c == "" or c == "|" or c == ")" or c == "\n" then break end
            items[#items + 1] = item()
        end
        return { t = "seq", items = items }
    end
    function alternation()
        local alts = { sequence() }
        while true do
            ws()
            if p:sub(i, i) ~= "|" then break end
            i = i + 1
            alts[#alts + 1] = sequence()
        end
        return #alts == 1 and alts[1] or { t = "alt", alts = alts }
    end
    while i <= #p do
        local s, e = p:find("^[%s]+", i)
        if s then i = e + 1 end
        if i > #p then break end
        local name = p:match("^[%w%-]+", i)
        assert(name, "rule name expected at " .. i)
        i = i + #name
        ws()
        assert(p:sub(i, i + 2) == "::=", "::= expected after " .. name)
        i = i + 3
        assert(not rules[name], "rule defined twice: " .. name)
        rules[name] = alternation()
        ws()
        assert(p:sub(i, i) == "\n" or i > #p, "end of rule expected at " .. i .. ": " .. p:sub(i, i + 20))
    end
    for name, node in pairs(rules) do
        local function check(n)
            if n.t == "ref" then assert(rules[n.name], "undefined rule " .. n.name .. " in " .. name) end
            for _, c in ipairs(n.items or n.alts or {}) do check(c) end
            if n.node then check(n.node) end
        end
        check(node)
    end
    assert(rules.root, "no root rule")
    return rules
end

local function in_class(node, cp)
    local hit = false
    for _, r in ipairs(node.ranges) do
        if cp >= r[1] and cp <= r[2] then hit = true break end
    end
    if node.neg then return not hit end
    return hit
end

-- Recognise -------------------------------------------------------------------

-- Does the grammar derive exactly `text`?
function M.recognise(rules, text)
    local cps = decode_utf8(text)
    local n = #cps
    local memo = {}
    local ends -- (node, pos) -> set {pos = true}
    local function set_list(set)
        local l = {}
        for k in pairs(set) do l[#l + 1] = k end
        table.sort(l)
        return l
    end
    function ends(node, pos)
        local t = node.t
        if t == "lit" then
            for k, cp in ipairs(node.cps) do
                if cps[pos + k - 1] ~= cp then return {} end
            end
            return { [pos + #node.cps] = true }
        elseif t == "class" then
            local cp = cps[pos]
            if cp and in_class(node, cp) then return { [pos + 1] = true } end
            return {}
        elseif t == "ref" then
            local key = node.name .. "@" .. pos
            local m = memo[key]
            if m == "busy" then error("left recursion in " .. node.name) end
            if m then return m end
            memo[key] = "busy"
            m = ends(rules[node.name], pos)
            memo[key] = m
            return m
        elseif t == "seq" then
            local cur = { [pos] = true }
            for _, it in ipairs(node.items) do
                local nxt = {}
                for _, p in ipairs(set_list(cur)) do
                    for e in pairs(ends(it, p)) do nxt[e] = true end
                end
                cur = nxt
                if next(cur) == nil then break end
            end
            return cur
        elseif t == "alt" then
            local out = {}
            for _, a in ipairs(node.alts) do
                for e in pairs(ends(a, pos)) do out[e] = true end
            end
            return out
        elseif t == "rep" then
            local out = {}
            local cur = { [pos] = true }
            if node.min == 0 then out[pos] = true end
            local count = 0
            local seen = { [pos] = 0 }
            while next(cur) ~= nil and (node.max == nil or count < node.max) do
                count = count + 1
                local nxt = {}
                for _, p in ipairs(set_list(cur)) do
                    for e in pairs(ends(node.node, p)) do
                        -- a position reached again at a count past min adds nothing new
                        if not (seen[e] and seen[e] >= node.min and count > node.min) and e <= n + 1 then
                            nxt[e] = true
                        end
                    end
                end
                for e in pairs(nxt) do
                    seen[e] = seen[e] and math.min(seen[e], count) or count
                    if count >= node.min then out[e] = true end
                end
                cur = nxt
                if count > n + node.min + 1 then break end
            end
            return out
        end
        error("unknown node " .. tostring(t))
    end
    return ends(rules.root and { t = "ref", name = "root" }, 1)[n + 1] == true
end

-- Sample ----------------------------------------------------------------------

-- What a negated class or `.` picks from: printable ASCII and a few letters beyond it.
local POOL = {}
for cp = 0x20, 0x7E do POOL[#POOL + 1] = cp end
for _, cp in ipairs { 0x7F, 0x85, 0xA0, 0xE9, 0xDF, 0x1680, 0x2000, 0x2028, 0x3000, 0xFEFF, 0x20AC, 0x4E2D, 0x1F600 } do POOL[#POOL + 1] = cp end

-- One random text of the grammar; nil when it ran too deep or into a class that matches
-- nothing (the caller tries again).
-- `rand(n)`: an integer in [1, n]; `extra`: how many repetitions past the minimum at most.
function M.sample(rules, rand, extra)
    extra = extra or 3
    local out = {}
    local depth = 0
    local function gen(node)
        local t = node.t
        if t == "lit" then
            for _, cp in ipairs(node.cps) do out[#out + 1] = utf8_char(cp) end
        elseif t == "class" then
            local cands = {}
            if node.neg then
                for _, cp in ipairs(POOL) do if in_class(node, cp) then cands[#cands + 1] = cp end end
            else
                for _, r in ipairs(node.ranges) do
                    -- ends and a few inside of each range
                    cands[#cands + 1] = r[1]
                    cands[#cands + 1] = r[2]
                    if r[2] - r[1] > 1 then cands[#cands + 1] = r[1] + rand(r[2] - r[1] - 1) end
                end
            end
            if #cands == 0 then error("dead end", 0) end -- a class that matches nothing: try again
            out[#out + 1] = utf8_char(cands[rand(#cands)])
        elseif t == "ref" then
            depth = depth + 1
            if depth > 40 then error("too deep", 0) end
            gen(rules[node.name])
            depth = depth - 1
        elseif t == "seq" then
            for _, it in ipairs(node.items) do gen(it) end
        elseif t == "alt" then
            -- deep down, the last alternative (the grammar writes the shortest last: a member left out, null)
            gen(node.alts[depth > 20 and #node.alts or rand(#node.alts)])
        elseif t == "rep" then
            local hi = node.max or (node.min + extra)
            if hi > node.min + extra then hi = node.min + extra end
            if depth > 20 then hi = node.min end
            local k = node.min + rand(hi - node.min + 1) - 1
            for _ = 1, k do gen(node.node) end
        end
    end
    local ok, err = pcall(gen, { t = "ref", name = "root" })
    if not ok then
        if err == "too deep" or err == "dead end" then return nil end
        error(err, 0)
    end
    return table.concat(out)
end

return M
