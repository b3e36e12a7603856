--- The stand-in model's conversation: it reads a provider-neutral request (the mail is the
-- first user message, each assistant message is an earlier attempt, later user messages are the
-- checker's feedback) and answers the way a real model does: mostly right, sometimes wrong in the
-- usual ways (fenced JSON, prose, a refusal, a cut-off object, wrong values), and after feedback
-- mostly corrected. Every choice is a draw from `jsoncontract.standin.hash`.
--
-- What a model "knows" about a particular contract is registered here by the examples
-- (examples/<name>_standin.lua, loaded by `load_examples`): each says how it recognises a
-- request for its contract and how it answers. A request no registered example recognises
-- gets a clean instance of its schema (`jsoncontract.standin.generate`).
-- @module jsoncontract.standin.conversation
local hash = require "jsoncontract.standin.hash"
local stext = require "jsoncontract.standin.text"
local generate = require "jsoncontract.standin.generate"

local floor, max = math.floor, math.max
local find, gsub, lower = string.find, string.gsub, string.lower
local concat, sort = table.concat, table.sort
local ipairs, type, tonumber, error, dofile, select = ipairs, type, tonumber, error, dofile, select
local unpack = table.unpack or unpack -- luacheck: ignore 113 143

local _M = { _VERSION = "0.1.0" }

--- Plain-text answers the model gives.
_M.REFUSAL_TEXT = "I'm sorry, I can't help with that."
_M.ASK_MORE_TEXT = "Could you tell me more about the problem?"

--- Share of retries that come back clean.
_M.FIX_RATE = 0.8

-- Earlier answers of its own the model recognises in a conversation that carries only the last.
local MAX_RECALL = 8

------------------------------------------------------------------------------
-- Faults
------------------------------------------------------------------------------

-- A draw keyed by `key` (a list of strings) and then the other parts.
local function draw(seed, key, ...)
    local parts = {}
    for i, k in ipairs(key) do parts[i] = k end
    for i = 1, select("#", ...) do parts[#parts + 1] = (select(i, ...)) end
    return hash.draw(seed, unpack(parts))
end

--- The fault of list `{{name, share}, ...}` that a uniform draw `u` picks (cumulative, after the
-- clean share), or nil for a clean answer.
-- @tparam table list
-- @tparam number u in [0, 1)
-- @treturn string|nil
function _M.pick(list, u)
    local acc = 1
    for _, f in ipairs(list) do acc = acc - f[2] end
    if u < acc then return nil end
    for _, f in ipairs(list) do
        acc = acc + f[2]
        if u < acc then return f[1] end
    end
    return list[#list][1]
end

--- The fault made on an attempt: drawn from `list` on attempt 1; after feedback mostly fixed
-- (`FIX_RATE`), else half the time the same mistake again and otherwise another one (never a
-- refusal or a cut-off: those are not retried).
-- @tparam integer seed
-- @tparam table key the strings the draws are keyed by (e.g. `{mail}`)
-- @tparam table list `{{name, share}, ...}`
-- @tparam integer attempt 1-based
-- @tparam[opt] boolean clean_stays a "same again" after a clean attempt stays clean
-- @treturn string|nil
function _M.fault_for(seed, key, list, attempt, clean_stays)
    if attempt <= 1 then return _M.pick(list, draw(seed, key, 1, "fault")) end
    local u = draw(seed, key, attempt, "fix")
    if u < _M.FIX_RATE then return nil end
    if u < _M.FIX_RATE + (1 - _M.FIX_RATE) / 2 then
        local prev = _M.fault_for(seed, key, list, attempt - 1, clean_stays)
        if prev ~= "refusal" and prev ~= "truncated" and (prev ~= nil or clean_stays) then return prev end
    end
    local retry = {}
    for _, f in ipairs(list) do
        if f[1] ~= "refusal" and f[1] ~= "truncated" then retry[#retry + 1] = f[1] end
    end
    return retry[floor(draw(seed, key, attempt, "other") * #retry) + 1]
end

--- A text cut at 30-80 % of its bytes (by `r`), at a character boundary.
-- @tparam string text
-- @tparam number r in [0, 1)
-- @treturn string
function _M.cut(text, r)
    local n = floor(#text * (0.3 + 0.5 * r))
    if n < 1 then n = 1 end
    return stext.utf8_cut(text, n)
end

--- Keep the output within a token budget; a cut answer becomes "truncated".
-- @tparam table ans
-- @tparam integer|nil max_tokens
-- @treturn table ans
function _M.budget(ans, max_tokens)
    max_tokens = tonumber(max_tokens)
    if not max_tokens or not ans.text or stext.cutoff_tokens(ans.text) <= max_tokens then return ans end
    local words, out = 0, {}
    local words_fit = floor(max_tokens * 10 / 13)
    for w, sp in ans.text:gmatch("(%S+)(%s*)") do
        if words >= words_fit then break end
        words = words + 1
        out[#out + 1] = w .. sp
    end
    ans.text = gsub(concat(out), "%s+$", "")
    if #ans.text > max_tokens * 4 then ans.text = stext.utf8_cut(ans.text, max(floor(max_tokens * 4), 0)) end
    ans.kind, ans.fault = "truncated", "truncated"
    return ans
end

--- Write the answer for a fault: clean JSON, fenced, a refusal, cut, prose, or JSON with the
-- fault in it, then keep it within the token budget.
-- @tparam table ans the answer so far (attempt, mail)
-- @tparam string|nil fault
-- @tparam number r a draw in [0, 1) for the style
-- @param v what was read from the input
-- @tparam table w `json = function(v, fault|nil, r) -> text`, `prose = function(v) -> text`
-- @tparam integer|nil max_tokens
-- @treturn table ans with `kind`, `text`, `fault`
function _M.write(ans, fault, r, v, w, max_tokens)
    local clean = w.json(v, nil, r)
    ans.fault = fault
    if fault == nil then
        ans.kind, ans.text = "json", clean
    elseif fault == "fenced" then
        ans.kind = "fenced"
        ans.text = (r < 0.5 and "Sure! Here is the data:\n\n" or "") .. "```json\n" .. clean .. "\n```"
    elseif fault == "refusal" then
        ans.kind = "refusal"
    elseif fault == "truncated" then
        ans.kind, ans.text = "truncated", _M.cut(clean, r)
    elseif fault == "prose" then
        ans.kind, ans.text = "prose", w.prose(v)
    else
        ans.kind, ans.text = "invalid", w.json(v, fault, r)
    end
    return _M.budget(ans, max_tokens)
end

------------------------------------------------------------------------------
-- What the model knows about particular contracts (registered by the examples)
------------------------------------------------------------------------------

local known = {}

--- Teach the model a contract.
-- @tparam table ex `name` (string), `order` (number: recognisers are asked in this order),
--   `recognise = function(schema|nil, system) -> boolean` (schema: the decoded JSON Schema sent
--   natively, nil in prompt mode; system: the system prompt), `answer = function(ans, seed,
--   request) -> ans` (fills `kind`, `text`, `fault`; see `answer`), and any fields of its own
-- @treturn table ex
-- @raise when `ex` lacks a name, a recogniser or an answer
function _M.register(ex)
    if type(ex) ~= "table" or type(ex.name) ~= "string" or type(ex.recognise) ~= "function"
        or type(ex.answer) ~= "function" then
        error("register: {name=, recognise=function, answer=function} expected", 2)
    end
    for i, k in ipairs(known) do
        if k.name == ex.name then table.remove(known, i) break end
    end
    known[#known + 1] = ex
    sort(known, function(a, b)
        if (a.order or 0) ~= (b.order or 0) then return (a.order or 0) < (b.order or 0) end
        return a.name < b.name
    end)
    return ex
end

--- A registered contract by name.
-- @tparam string name
-- @treturn table|nil
function _M.known(name)
    for _, k in ipairs(known) do
        if k.name == name then return k end
    end
    return nil
end

--- The registered contracts, in the order they are asked.
-- @treturn table list of the registered tables
function _M.registered()
    local out = {}
    for i, k in ipairs(known) do out[i] = k end
    return out
end

--- Which registered contract a request is for.
-- @tparam table|nil schema
-- @tparam[opt] string system
-- @treturn string|nil name
function _M.recognise(schema, system)
    for _, k in ipairs(known) do
        if k.recognise(schema, system or "") then return k.name end
    end
    return nil
end

--- A recogniser by property names: the schema has all of `keys` among its properties, or
-- (without a schema) the system prompt names them all.
-- @tparam table keys property names
-- @treturn function recognise(schema, system) -> boolean
function _M.by_keys(keys)
    return function(schema, system)
        if type(schema) == "table" then
            if type(schema.properties) ~= "table" then return false end
            for _, k in ipairs(keys) do
                if schema.properties[k] == nil then return false end
            end
            return true
        end
        if schema ~= nil then return false end
        local sys = lower(type(system) == "string" and system or "")
        for _, k in ipairs(keys) do
            if not find(sys, k, 1, true) then return false end
        end
        return true
    end
end

--- Register every examples/<name>_standin.lua of a folder (each returns its `register` table).
-- @tparam string dir the examples folder
-- @treturn integer how many were registered
function _M.load_examples(dir)
    local lfs = require "lfs"
    local n = 0
    local ok, iter, state = pcall(lfs.dir, dir)
    if not ok then return 0 end
    local files = {}
    for name in iter, state do
        if name:match("_standin%.lua$") then files[#files + 1] = name end
    end
    sort(files)
    for _, name in ipairs(files) do
        _M.register(dofile(dir .. "/" .. name))
        n = n + 1
    end
    return n
end

------------------------------------------------------------------------------
-- The answer
------------------------------------------------------------------------------

--- The model's answer to a conversation.
-- @tparam table request the conversation, provider-neutral:
--   `messages` (list of {role="user"|"assistant", content=string or text parts}; the first user
--   message is the mail, verbatim), `system` (string or nil), `schema` (decoded JSON Schema or nil),
--   `json_object` (true: JSON mode without a schema, the answer is an object),
--   `max_tokens` (integer output budget in tokens, or nil)
-- @tparam[opt] table opts `seed` (integer, default 1)
-- @treturn table answer: `kind` ("json" = valid, "invalid" = JSON that breaks the schema,
--   "fenced", "prose", "refusal", "truncated"), `text` (string, nil for a refusal), `fault` (nil
--   when clean, else the registered contract's fault name, "refusal", "truncated", ...),
--   `attempt` (integer), `mail` (string). A schema no example recognises: always "json", no faults.
-- @raise when request is not a table
-- @usage local a = conversation.answer({ messages = { { role = "user", content = mail } } }, { seed = 7 })
function _M.answer(request, opts)
    if type(request) ~= "table" then error("request must be a table", 2) end
    local seed = opts and opts.seed or 1
    local messages = type(request.messages) == "table" and request.messages or {}
    local mail, attempt, last_reply = nil, 1, nil
    for _, m in ipairs(messages) do
        if type(m) == "table" then
            if m.role == "assistant" then
                attempt = attempt + 1
                last_reply = stext.text_of(m.content)
            elseif m.role == "user" and not mail then
                mail = stext.text_of(m.content)
            end
        end
    end
    mail = mail or ""
    local ans = { attempt = attempt, mail = mail }
    if find(mail, "[[refuse]]", 1, true) then
        ans.kind, ans.fault = "refusal", "refusal"
        return ans
    end
    local schema = request.schema
    local name = _M.recognise(schema, stext.text_of(request.system))
    if name then
        local ex = _M.known(name)
        if attempt == 2 then
            -- One earlier reply: the whole history, or a client that re-asks with the last reply
            -- alone. Which of its own answers that reply is says how far the conversation is, so
            -- the model goes on as it would with the whole history (a reply it gave on several
            -- attempts counts as the first: the same conversation gets the same answer).
            for k = 1, MAX_RECALL do
                local a = ex.answer({ attempt = k, mail = mail }, seed, request)
                if a.text == last_reply then
                    attempt = k + 1
                    break
                end
            end
            ans.attempt = attempt
        end
        return ex.answer(ans, seed, request)
    end
    if schema == nil then
        ans.kind, ans.text = "json", generate.minimal_json(request.json_object and { type = "object" } or {})
    else
        ans.kind, ans.text = "json", generate.instance_json(type(schema) == "table" and schema or {})
    end
    return _M.budget(ans, request.max_tokens)
end

return _M
