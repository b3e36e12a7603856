-- make bench: the tape, side by side with lua-cjson in one run.
--   1. the support-ticket reply (239 B) and a 1 KB reply of the same kind (bench/ticket_1k.lua):
--      bytes -> validated Lua value (validator:check) against lua-cjson's decode alone (no
--      validation): ratio jc/cjson; and validator:check_json (the same gates answering with the
--      accepted text, no Lua value) against validator:check
--   2. 1 MB document: core.decode against cjson.decode
--   3. cost against size, 1 KB .. 10 MB: ns per byte of core.decode and validator:check
--      (a flat column means linear)
--   4. peak memory (VmHWM, KiB) of one process decoding a 64 MB document, jc and cjson,
--      each in its own child process (BENCH_NO_64MB=1 skips it)
-- Time is CPU time (os.clock), best of BENCH_ROUNDS rounds alternating jc and cjson so
-- both see the same load. Not a test: nothing asserts a time.
--   lua5.4 bench/tape_bench.lua   /   luajit bench/tape_bench.lua   (after make)
local is_jit = type(jit) == "table"
local build = os.getenv("BUILD") or (is_jit and "build/luajit" or "build/lua5.4")
package.cpath = build .. "/?.so;" .. package.cpath
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path

local core = require "jsoncontract.core"
local ok_cjson, cjson = pcall(require, "cjson")
if not ok_cjson then
    io.stderr:write("tape_bench: lua-cjson not installed (apt-get install lua-cjson)\n")
    os.exit(1)
end
local ROUNDS = tonumber(os.getenv("BENCH_ROUNDS")) or 15
local clock, fmt, concat, sub = os.clock, string.format, table.concat, string.sub

-- the child process for the memory figure: decode the file with one library, print VmHWM
if arg and arg[1] == "--peak" then
    local f = assert(io.open(arg[3], "rb"))
    local text = f:read("*a")
    f:close()
    local v
    if arg[2] == "jc" then v = assert(core.decode(text, { max_bytes = 1e9 })) else v = cjson.decode(text) end
    local st = assert(io.open("/proc/self/status")):read("*a")
    print(st:match("VmHWM:%s*(%d+)"), #text, type(v))
    os.exit(0)
end

local function calibrate(fn, secs)
    local n = 1
    while true do
        local t0 = clock()
        for _ = 1, n do fn() end
        local dt = clock() - t0
        if dt > secs / 2 then return math.max(1, math.floor(n * secs / dt)) end
        n = n * 2
    end
end

-- Best ns per call of fa and fb, rounds alternating.
local function pair(fa, fb, secs)
    secs = secs or 0.05
    local na, nb = calibrate(fa, secs), calibrate(fb, secs)
    local ba, bb = math.huge, math.huge
    for _ = 1, ROUNDS do
        collectgarbage("collect")
        local t0 = clock()
        for _ = 1, na do fa() end
        ba = math.min(ba, (clock() - t0) / na)
        collectgarbage("collect")
        t0 = clock()
        for _ = 1, nb do fb() end
        bb = math.min(bb, (clock() - t0) / nb)
    end
    return ba * 1e9, bb * 1e9
end

-- Best ns per call of each function of 'fns', every round running each in turn.
local function several(fns)
    local n, best = {}, {}
    for k, f in ipairs(fns) do n[k], best[k] = calibrate(f, 0.05), math.huge end
    for _ = 1, ROUNDS do
        for k, f in ipairs(fns) do
            collectgarbage("collect")
            local t0 = clock()
            for _ = 1, n[k] do f() end
            best[k] = math.min(best[k], (clock() - t0) / n[k])
        end
    end
    for k in ipairs(best) do best[k] = best[k] * 1e9 end
    return best
end

print(fmt("tape bench, %s, %d rounds", is_jit and jit.version or _VERSION, ROUNDS))

-- 1. the ticket
local ticket = dofile("examples/support_ticket.lua")
local TICKET = '{"intent":"delivery","order_id":"55310","urgent":true,"summary":"The customer\'s '
    .. 'parcel for order 55310 has not arrived after two weeks and they need it before Friday for '
    .. 'a birthday; they ask for a refund or a replacement sent by express."}'
local v = core.compile(ticket.schema)
assert(v:check(TICKET))
local jc_ns, cj_ns = pair(function() return v:check(TICKET) end, function() return cjson.decode(TICKET) end)
print(fmt("ticket (%d B): validator:check %.0f ns, cjson.decode %.0f ns: jc/cjson %.2f", #TICKET, jc_ns, cj_ns,
    jc_ns / cj_ns))
local tape = assert(core.parse(TICKET))
local vt_ns, dec_ns = pair(function() return v:validate(tape) end, function() return core.decode(TICKET) end)
print(fmt("ticket: validator:validate(tape) %.0f ns, core.decode %.0f ns (decode jc/cjson %.2f)", vt_ns, dec_ns,
    dec_ns / cj_ns))

-- 1b. a 1 KB ticket reply (bench/ticket_1k.lua): the ticket's fields and what a triage adds
local t1k = dofile("bench/ticket_1k.lua")
local v1k = core.compile(t1k.schema)
assert(v1k:check(t1k.TEXT))
jc_ns, cj_ns = pair(function() return v1k:check(t1k.TEXT) end, function() return cjson.decode(t1k.TEXT) end)
print(fmt("ticket 1 KB (%d B): validator:check %.0f ns, cjson.decode %.0f ns: jc/cjson %.2f", #t1k.TEXT, jc_ns,
    cj_ns, jc_ns / cj_ns))
tape = assert(core.parse(t1k.TEXT))
vt_ns, dec_ns = pair(function() return v1k:validate(tape) end, function() return core.decode(t1k.TEXT) end)
print(fmt("ticket 1 KB: validator:validate(tape) %.0f ns, core.decode %.0f ns (decode jc/cjson %.2f)", vt_ns,
    dec_ns, dec_ns / cj_ns))

-- 1c. the same 1 KB reply answered as JSON text: the same gates, no Lua value built
local js_ns
js_ns, jc_ns = pair(function() return v1k:check_json(t1k.TEXT) end, function() return v1k:check(t1k.TEXT) end)
print(fmt("ticket 1 KB: validator:check_json %.0f ns, validator:check %.0f ns: json/check %.2f, json/cjson %.2f",
    js_ns, jc_ns, js_ns / jc_ns, js_ns / cj_ns))

-- 1d. LuaJIT: the FFI path (jsoncontract.ffi) against the C API on the same 1 KB reply; the
-- faster one is what jsoncontract uses (check_json through the FFI, check on the C API)
local ok_ffi, jffi = pcall(require, "jsoncontract.ffi")
if ok_ffi and jffi.available then
    local capi = jffi.capi
    local fj, cjn = pair(function() return jffi.check_json(v1k, t1k.TEXT) end,
        function() return capi.check_json(v1k, t1k.TEXT) end)
    print(fmt("ticket 1 KB: check_json ffi %.0f ns, C API %.0f ns: ffi/C API %.2f, ffi/cjson %.2f", fj, cjn,
        fj / cjn, fj / cj_ns))
    local fk, ck = pair(function() return jffi.check(v1k, t1k.TEXT) end,
        function() return capi.check(v1k, t1k.TEXT) end)
    print(fmt("ticket 1 KB: check ffi %.0f ns, C API %.0f ns: ffi/C API %.2f; C API check/cjson %.2f", fk, ck,
        fk / ck, ck / cj_ns))
elseif is_jit then
    print("FFI path not available: " .. tostring(ok_ffi and jffi.reason or jffi))
end

-- 1e. the profile of bytes -> validated Lua value on the 1 KB reply: what each part costs, as a
-- share of cjson.decode, and what limits the ratio. "parse" is check_json against the schema
-- true (the strict parse and one call); "validate" is validate(tape); "build" is what check
-- costs over check_json (the Lua value). "Lua objects alone" makes the same value's tables and
-- value strings and nothing else (table.new with exact sizes, each string interned from one
-- buffer, member names reused as check reuses them): what any decoder that builds this value
-- pays on this runtime, whatever its parser. LuaJIT only (table.new).
do
    local ok_new, new_tab = pcall(require, "table.new")
    local any = core.compile(true)
    local fns = {
        function() return cjson.decode(t1k.TEXT) end,
        function() return any:check_json(t1k.TEXT) end,
        function() return v1k:validate(tape) end,
        function() return v1k:check_json(t1k.TEXT) end,
        function() return v1k:check(t1k.TEXT) end,
    }
    if ok_new then
        local array_mt, value = core.array_mt, assert(v1k:check(t1k.TEXT))
        local buf, at, keys = {}, {}, {}
        local size = 0
        local function plan(x)
            if type(x) == "string" then
                if not at[x] then
                    buf[#buf + 1] = x
                    at[x] = { size + 1, size + #x }
                    size = size + #x
                end
            elseif type(x) == "table" and x ~= core.null then
                local list = {}
                if getmetatable(x) == array_mt then
                    for i = 1, #x do plan(x[i]) end
                else
                    for k, y in pairs(x) do list[#list + 1] = k; plan(y) end
                end
                keys[x] = list
            end
        end
        plan(value)
        local text = concat(buf)
        local function make(x)
            if type(x) == "string" then
                local p = at[x]
                return sub(text, p[1], p[2])
            elseif type(x) ~= "table" or x == core.null then
                return x
            end
            local list = keys[x]
            if getmetatable(x) == array_mt then
                local n = #x
                local y = setmetatable(new_tab(n, 0), array_mt)
                for i = 1, n do y[i] = make(x[i]) end
                return y
            end
            local y = new_tab(0, #list)
            for i = 1, #list do
                local k = list[i]
                y[k] = make(x[k])
            end
            return y
        end
        fns[#fns + 1] = function() return make(value) end
    end
    local ns = several(fns)
    local cj = ns[1]
    local line = fmt("ticket 1 KB profile (share of cjson.decode %.0f ns, one interleaved run): parse %.2f, "
        .. "validate %.2f, build %.2f = check %.2f", cj, ns[2] / cj, ns[3] / cj, (ns[5] - ns[4]) / cj, ns[5] / cj)
    if ns[6] then line = line .. fmt("; Lua objects alone %.2f (the floor of any builder here)", ns[6] / cj) end
    print(line)
end

-- 2./3. documents of growing size: ticket-like objects in an array
local function document(bytes)
    local parts, size, i = {}, 2, 0
    local seed = 12345
    local function rand(n)
        seed = (seed * 1103515245 + 12345) % 2147483648
        return seed % n
    end
    local WORDS = { "order", "parcel", "refund", "never", "arrived", "please", "urgent",
        "Lieferung", "élément", "payé", "the", "my", "account", "was", "charged", "twice",
        "return", "label", "by", "Friday", "invoice", "\\n", "\\\"quoted\\\"" }
    while size < bytes do
        i = i + 1
        local words = {}
        for w = 1, 6 + rand(18) do words[w] = WORDS[rand(#WORDS) + 1] end
        local item = fmt('{"intent":"%s","order_id":%s,"urgent":%s,"summary":"%s","score":%d.%02d}',
            ({ "delivery", "return", "payment", "other" })[rand(4) + 1],
            rand(3) == 0 and "null" or ('"' .. tostring(1000 + rand(90000)) .. '"'),
            rand(2) == 0 and "true" or "false", concat(words, " "), rand(100), rand(100))
        parts[#parts + 1] = item
        size = size + #item + 1
    end
    return "[" .. concat(parts, ",") .. "]"
end
local item_schema = {}
for k, x in pairs(ticket.schema) do item_schema[k] = x end
item_schema.properties = {}
for k, x in pairs(ticket.schema.properties) do item_schema.properties[k] = x end
item_schema.properties.score = { type = "number", minimum = 0 }
local many = core.compile({ type = "array", items = item_schema })

local mb = document(1000000)
assert(many:check(mb))
local jd, cd = pair(function() return core.decode(mb) end, function() return cjson.decode(mb) end, 0.3)
print(fmt("1 MB document: core.decode %.2f ms, cjson.decode %.2f ms: jc/cjson %.2f", jd / 1e6, cd / 1e6, jd / cd))

print("size        decode ns/B  check ns/B  cjson ns/B")
for _, size in ipairs { 1000, 10000, 100000, 1000000, 10000000 } do
    local doc = document(size)
    local a, b = pair(function() return core.decode(doc) end, function() return cjson.decode(doc) end,
        size >= 1e7 and 1 or 0.2)
    local c = pair(function() return many:check(doc) end, function() end, size >= 1e7 and 1 or 0.2)
    print(fmt("%-10d  %11.2f  %10.2f  %10.2f", #doc, a / #doc, c / #doc, b / #doc))
end

-- 4. peak memory for a 64 MB document, one child process per library
if not os.getenv("BENCH_NO_64MB") then
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(document(64 * 1024 * 1024 - 64))
    f:close()
    local interp = arg and arg[-1] or (is_jit and "luajit" or "lua5.4")
    local function peak(lib)
        local p = io.popen(fmt("BUILD=%s %s bench/tape_bench.lua --peak %s %s", build, interp, lib, path))
        local out = p:read("*a")
        p:close()
        return tonumber(out:match("^(%d+)"))
    end
    local pj, pc = peak("jc"), peak("cjson")
    os.remove(path)
    if pj and pc then
        print(fmt("64 MB document: peak RSS jc %d MiB, cjson %d MiB: jc/cjson %.2f", math.floor(pj / 1024),
            math.floor(pc / 1024), pj / pc))
    else
        print("64 MB document: a child process failed (out of memory?)")
    end
end
