-- make bench: jsoncontract.core decode/encode against lua-cjson (Debian's
-- lua-cjson, require "cjson") under the same Lua, side by side in one run.
-- Prints ns per document (best of ROUNDS alternating rounds of CPU time,
-- os.clock) and
-- the ratio jsoncontract/cjson: below 1.0 means jsoncontract is faster.
--   lua5.4 bench/decode_bench.lua             (after make)
--   make bench LUA=luajit
-- Environment: BUILD (build folder, default build/lua5.4 or build/luajit),
-- JC_SHARED (shared folder, default ../shared), BENCH_ROUNDS (default 15).
-- Not a test: nothing here asserts a time.
local is_jit = type(jit) == "table"
local build = os.getenv("BUILD") or (is_jit and "build/luajit" or "build/lua5.4")
package.cpath = build .. "/?.so;" .. package.cpath
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path

local core = require "jsoncontract.core"
local ok_cjson, cjson = pcall(require, "cjson")
if not ok_cjson then
    io.stderr:write("decode_bench: lua-cjson not installed (apt-get install lua-cjson)\n")
    os.exit(1)
end

local ROUNDS = tonumber(os.getenv("BENCH_ROUNDS")) or 15
local SHARED = os.getenv("JC_SHARED") or "../shared"
local clock, concat, fmt = os.clock, table.concat, string.format

-- A ~1 KB model reply: an OpenAI chat completion envelope whose content is
-- the support-ticket JSON, as the protocol gate receives it.
local REPLY = [[
{
  "id": "chatcmpl-9xKq2mBvT4rLw8ZpN3sYd6HfJc1A",
  "object": "chat.completion",
  "created": 1732950123,
  "model": "gpt-4o-mini-2024-07-18",
  "system_fingerprint": "fp_0ba0d124f1",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": "{\"intent\":\"delivery\",\"order_id\":\"55310\",\"urgent\":true,\"summary\":\"The customer's parcel for order 55310 has not arrived after two weeks and they need it before Friday for a birthday; they ask for a refund or a replacement sent by express.\"}",
        "refusal": null,
        "tool_calls": [],
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 412,
    "completion_tokens": 61,
    "total_tokens": 473,
    "prompt_tokens_details": { "cached_tokens": 0, "audio_tokens": 0 },
    "completion_tokens_details": {
      "reasoning_tokens": 0,
      "audio_tokens": 0,
      "accepted_prediction_tokens": 0,
      "rejected_prediction_tokens": 0
    }
  },
  "service_tier": "default",
  "x_request": { "region": "eu-west-1", "latency_ms": 812.5, "retries": 0, "cache": false }
}
]]

-- A ~1 MB document: the support-emails corpus as one JSON array (repeated up
-- to 1 MB), or, without the corpus, a deterministic generated array of
-- ticket-like objects (same mix: strings with some non-ASCII, numbers,
-- booleans, null, nested objects).
local function corpus_document()
    local f = io.open(SHARED .. "/corpora/support-emails/emails.jsonl", "rb")
    if not f then return nil end
    local lines = {}
    for line in f:lines() do
        if line:find("%S") then lines[#lines + 1] = line end
    end
    f:close()
    if #lines == 0 then return nil end
    local parts, size, i = {}, 2, 0
    while size < 1000000 do
        i = i + 1
        local line = lines[(i - 1) % #lines + 1]
        parts[#parts + 1] = line
        size = size + #line + 2
    end
    return "[\n" .. concat(parts, ",\n") .. "\n]\n", "support-emails corpus"
end

local function generated_document()
    local seed = 12345
    local function rand(n)
        seed = (seed * 1103515245 + 12345) % 2147483648
        return seed % n
    end
    local WORDS = { "order", "parcel", "refund", "never", "arrived", "please", "urgent",
        "Lieferung", "élément", "payé", "the", "my", "account", "was", "charged", "twice",
        "😀", "return", "label", "by", "Friday", "invoice", "\\n", "\\\"quoted\\\"" }
    local parts, size, i = {}, 2, 0
    while size < 1000000 do
        i = i + 1
        local words = {}
        for w = 1, 8 + rand(40) do words[w] = WORDS[rand(#WORDS) + 1] end
        local item = fmt('{"id": "gen-%06d", "text": "%s", "source": "generated", '
            .. '"lang": "%s", "synthetic": %s, "score": %d.%02d, "order": %s, '
            .. '"meta": {"channel": "mail", "attempt": %d, "tags": ["a", "b%d"]}}',
            i, concat(words, " "), rand(2) == 0 and "en" or "de", rand(2) == 0 and "true" or "false",
            rand(100), rand(100), rand(3) == 0 and "null" or tostring(10000 + rand(90000)), rand(4), rand(9))
        parts[#parts + 1] = item
        size = size + #item + 2
    end
    return "[\n" .. concat(parts, ",\n") .. "\n]\n", "generated"
end

-- Calls of 'fn(arg)' that take about 'secs' seconds of CPU time.
local function calibrate(fn, arg, secs)
    local n = 1
    while true do
        local t0 = clock()
        for _ = 1, n do fn(arg) end
        local dt = clock() - t0
        if dt > secs / 2 then return math.max(1, math.floor(n * secs / dt)) end
        n = n * 2
    end
end

-- Best CPU time per call, in ns, of 'fa(a)' and of 'fb(b)'. The rounds
-- alternate (a, b, a, b, ...) so that both see the same machine load, and
-- the best round counts: load only ever adds time.
local function measure_pair(fa, a, fb, b)
    local na, nb = calibrate(fa, a, 0.05), calibrate(fb, b, 0.05)
    local best_a, best_b = math.huge, math.huge
    for _ = 1, ROUNDS do
        collectgarbage("collect")
        local t0 = clock()
        for _ = 1, na do fa(a) end
        local per = (clock() - t0) / na
        if per < best_a then best_a = per end
        collectgarbage("collect")
        t0 = clock()
        for _ = 1, nb do fb(b) end
        per = (clock() - t0) / nb
        if per < best_b then best_b = per end
    end
    return best_a * 1e9, best_b * 1e9
end

local function check_same(a, b, what)
    -- Both decoders must agree (key sets and scalar values), else the race is
    -- not fair. cjson has no integers on 5.4 and its own null/array markers.
    local ta, tb = type(a), type(b)
    if ta == "table" and tb == "table" then
        for k, v in pairs(a) do check_same(v, b[k], what) end
        for k in pairs(b) do
            if a[k] == nil then error(what .. ": cjson has an extra key " .. tostring(k)) end
        end
    elseif ta == "number" and tb == "number" then
        if a ~= b then error(what .. ": numbers differ " .. a .. " / " .. b) end
    elseif a ~= b and not (a == core.null and b == cjson.null) then
        error(what .. ": values differ: " .. tostring(a) .. " / " .. tostring(b))
    end
end

local doc, doc_source = corpus_document()
if not doc then doc, doc_source = generated_document() end

local cases = {
    { name = "reply " .. #REPLY .. " B", text = REPLY },
    { name = "doc " .. #doc .. " B", text = doc },
}

local decode, cdecode = core.decode, cjson.decode
local encode, cencode = core.encode, cjson.encode

print(fmt("%s, lua-cjson %s, %d rounds, best of; 1 MB document: %s",
    is_jit and jit.version or _VERSION, cjson._VERSION or "?", ROUNDS, doc_source))
print(fmt("%-22s %14s %14s %8s", "case", "jsoncontract", "lua-cjson", "ratio"))
local function row(name, a, b)
    print(fmt("%-22s %11.0f ns %11.0f ns %8.2f", name, a, b, a / b))
end
for _, c in ipairs(cases) do
    local v, err = decode(c.text)
    if not v then error("decode_bench: " .. c.name .. ": " .. tostring(err)) end
    check_same(v, cdecode(c.text), c.name)
    row("decode " .. c.name, measure_pair(decode, c.text, cdecode, c.text))
end
-- LuaJIT: the FFI path (jsoncontract.ffi: parse through ffi, value built by JIT-compiled
-- Lua), against lua-cjson and against the C API path above; "the faster one wins" is read
-- from these rows (jc.decode keeps the C API path while its rows are lower).
local ok_ffi, jffi = pcall(require, "jsoncontract.ffi")
if ok_ffi and jffi.available then
    for _, c in ipairs(cases) do
        check_same(jffi.decode(c.text), cdecode(c.text), c.name .. " (ffi)")
        row("decode " .. c.name .. " (ffi)", measure_pair(jffi.decode, c.text, cdecode, c.text))
        local f, capi = measure_pair(jffi.decode, c.text, decode, c.text)
        print(fmt("%-22s %11.0f ns %11.0f ns %8.2f  (ffi / C API)", "  ffi vs C API", f, capi, f / capi))
    end
elseif is_jit then
    print("FFI path not available: " .. tostring(ok_ffi and jffi.reason or jffi))
end
for _, c in ipairs(cases) do
    local v = decode(c.text)
    local cv = cdecode(c.text)
    row("encode " .. c.name, measure_pair(encode, v, cencode, cv))
end
print("ratio = jsoncontract / lua-cjson (lower is faster); encode sorts object keys, cjson does not")
