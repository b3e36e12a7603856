--- The stand-in model: a deterministic, modest "language model" for the support-ticket contract.
-- Pure functions, no sockets, no cjson: `jsoncontract.standin.server` puts it behind HTTP.
--
-- It reads a conversation (the mail is the first user message, each assistant message is an
-- earlier attempt, later user messages are the checker's feedback) and answers the way a real
-- model does: mostly right, sometimes wrong in the usual ways (fenced JSON, an enum value in the
-- mail's language, "ja" for a boolean, an extra field, a number for a string, a refusal, a cut-off
-- object, prose), and after feedback mostly corrected. Every choice comes from a hash of
-- (seed, mail text, attempt), so the same seed gives the same answers on Lua 5.1-5.4 and LuaJIT.
-- @module jsoncontract.standin.model

local floor, ceil = math.floor, math.ceil
local byte, sub, find, gsub, lower, format, rep =
    string.byte, string.sub, string.find, string.gsub, string.lower, string.format, string.rep
local concat, sort = table.concat, table.sort
local pairs, ipairs, type, tostring, tonumber = pairs, ipairs, type, tostring, tonumber

local _M = { _VERSION = "0.1.0" }

--- Plain-text answers the model gives.
_M.REFUSAL_TEXT = "I'm sorry, I can't help with that."
_M.ASK_MORE_TEXT = "Could you tell me more about the problem?"

-- Share of each fault on attempt 1 (the rest is clean JSON). Order matters: cumulative draw.
local FAULTS_FIRST = {
    { "fenced", 0.06 }, { "intent_language", 0.06 }, { "urgent_string", 0.05 },
    { "extra_field", 0.04 }, { "order_id_number", 0.03 }, { "refusal", 0.02 },
    { "truncated", 0.02 }, { "prose", 0.02 },
}
-- Mistakes still made after feedback (no refusals or cut-offs: those are not retried).
local FAULTS_RETRY = {
    "fenced", "intent_language", "urgent_string", "extra_field", "order_id_number", "prose",
}
local FIX_RATE = 0.8 -- share of retries that come back clean

_M.FAULTS = {}
for i, f in ipairs(FAULTS_FIRST) do _M.FAULTS[i] = f[1] end

------------------------------------------------------------------------------
-- Deterministic hashing (arithmetic only: exact in doubles and in 5.4 integers)
------------------------------------------------------------------------------

local TWO32 = 4294967296

local function bxor8(a, b)
    local r, p = 0, 1
    for _ = 1, 8 do
        local x, y = a % 2, b % 2
        if x ~= y then r = r + p end
        a, b, p = (a - x) / 2, (b - y) / 2, p * 2
    end
    return r
end

local function bxor32(a, b)
    local r, p = 0, 1
    for _ = 1, 4 do
        local x, y = a % 256, b % 256
        r = r + bxor8(x, y) * p
        a, b, p = (a - x) / 256, (b - y) / 256, p * 256
    end
    return r
end

-- (a * b) mod 2^32 for a, b < 2^32 without leaving the exact range of a double.
local function mul32(a, b)
    local bl = b % 65536
    local bh = (b - bl) / 65536
    return ((a * bh) % 65536 * 65536 + a * bl) % TWO32
end

-- FNV-1a 32 over s, continuing from h.
local function fnv(h, s)
    for i = 1, #s do
        local c = byte(s, i)
        local lo = h % 256
        h = h - lo + bxor8(lo, c)
        h = mul32(h, 16777619)
    end
    return h
end

-- murmur3 finaliser: spreads FNV's weak high bits.
local function fmix(h)
    h = bxor32(h, floor(h / 65536))
    h = mul32(h, 2246822507)
    h = bxor32(h, floor(h / 8192))
    h = mul32(h, 3266489909)
    h = bxor32(h, floor(h / 65536))
    return h
end

--- A number in [0, 1) from the seed and any strings.
-- @tparam number seed integer seed
-- @tparam string ... parts to hash
-- @treturn number uniform draw in [0, 1)
function _M.draw(seed, ...)
    local h = fnv(2166136261, format("%d", floor(tonumber(seed) or 0)))
    for i = 1, select("#", ...) do
        h = fnv(h, "\0" .. tostring((select(i, ...))))
    end
    return fmix(h) / TWO32
end

------------------------------------------------------------------------------
-- Reading the mail
------------------------------------------------------------------------------

local INTENT_WORDS = {
    ["return"] = {
        "return", "refund", "exchange", "send back", "send it back", "reimburs", "money back", "rebate",
        "compensation", "restitution", "rückgabe", "zurückgeben", "zurücksenden", "zurückschicken", "zurück",
        "rückerstattung", "erstattung", "umtausch", "retoure", "devolución", "devolucion", "devolver",
        "reembolso", "cambiar", "retour", "retourner", "rembours", "échange", "devolução", "devolucao",
        "troca", "trocar", "austausch",
    },
    payment = {
        "payment", "pay", "paid", "paying", "charge", "charged", "invoice", "billing", "bill", "card",
        "paypal", "credit", "debit", "transaction", "zahlung", "bezahl", "rechnung", "abbuchung",
        "kreditkarte", "berweisung", "abrechnung", "fee", "fees", "pago", "pagar", "factura", "cobro", "tarjeta", "paiement", "payer",
        "facture", "carte", "prélèvement", "pagamento", "fatura", "cobrança", "cartão",
    },
    delivery = {
        "deliver", "shipping", "shipment", "shipped", "ship", "courier", "arrive", "arrival", "package",
        "parcel", "tracking", "track", "dispatch", "transit", "lieferung", "liefer", "geliefert", "paket",
        "versand", "sendung", "zustell", "kurier", "envío", "envio", "entrega", "paquete", "llegado",
        "repartidor", "seguimiento", "livraison", "livré", "colis", "expédition", "livreur", "pacote",
        "chegou", "rastreamento", "transportadora",
    },
}
local INTENT_ORDER = { "return", "payment", "delivery" } -- tie-break: the more specific first

local URGENT_WORDS = {
    "urgent", "asap", "immediately", "immediate", "emergency", "tomorrow", "right away", "critical",
    "as soon as possible", "dringend", "sofort", "eilig", "umgehend", "so schnell wie möglich",
    "urgente", "inmediat", "lo antes posible", "urgence", "immédiatement", "dès que possible",
    "imediatamente", "o mais rápido",
}

local ORDER_WORDS = {
    "order", "#", "nr", "no.", "number", "purchase", "bestell", "auftrag", "pedido", "commande",
    "encomenda", "ref", "invoice", "rechnung", "factura", "facture", "fatura", "bill", "case",
}

local VAGUE_WORDS = {
    "something", "wrong", "problem", "help", "irgendwas", "etwas", "stimmt nicht", "hilfe", "algo",
    "quelque", "alguma", "ayuda", "aide", "ajuda",
}

-- True when the lowercased text holds `word` at the start of a word.
local function has_word(low, word)
    local c = byte(word, 1)
    if c and ((c >= 97 and c <= 122) or (c >= 48 and c <= 57)) then
        return find(low, "%f[%w]" .. gsub(word, "%p", "%%%0")) ~= nil
    end
    return find(low, word, 1, true) ~= nil
end

local function count_words(low, list)
    local n = 0
    for _, w in ipairs(list) do
        if has_word(low, w) then n = n + 1 end
    end
    return n
end

--- The intent a plain keyword reader gives the mail.
-- @tparam string text the mail
-- @treturn string "delivery", "return", "payment" or "other"
function _M.intent_of(text)
    local low = lower(text)
    local best, score = "other", 0
    for _, intent in ipairs(INTENT_ORDER) do
        local n = count_words(low, INTENT_WORDS[intent])
        if n > score then best, score = intent, n end
    end
    return best
end

local function is_order_context(low, s)
    local before = sub(low, s > 40 and s - 40 or 1, s - 1)
    for _, w in ipairs(ORDER_WORDS) do
        if has_word(before, w) then return true end
    end
    return false
end

--- The order number in the mail: 4-6 digits near an order word, else a standalone one that
-- does not look like a year, an amount or a model number; nil when none (never invented).
-- @tparam string text the mail
-- @treturn string|nil digits
function _M.order_id_of(text)
    local low = lower(text)
    local standalone
    local init = 1
    while true do
        local s, e = find(text, "%d+", init)
        if not s then break end
        init = e + 1
        local digits = sub(text, s, e)
        local prev = s > 1 and sub(text, s - 1, s - 1) or ""
        local prev2 = s > 2 and sub(text, s - 2, s - 2) or ""
        local nxt = sub(text, e + 1, e + 2)
        local glued = find(prev, "%a") or (find(prev, "[%.,]") and find(prev2, "%d"))
            or (prev == "-" and find(prev2, "%w")) or find(nxt, "^%a") or find(nxt, "^[%.,]%d")
        if #digits >= 4 and #digits <= 6 and not glued then
            local before = sub(text, s > 16 and s - 16 or 1, s - 1)
            local model_no = find(before, "%u%u+%s*%d*%s*$") or find(before, "%l%u%a*%s*$")
                or find(before, "%d%s+$")
            local money = prev == "$" or find(sub(text, s > 3 and s - 3 or 1, s - 1), "[\226\194]")
                or find(sub(low, e + 1, e + 12), "^%s*[%$\226\194]") or find(sub(low, e + 1, e + 12), "^%s*dollar")
                or find(sub(low, e + 1, e + 12), "^%s*eur")
            local n = tonumber(digits)
            local year = #digits == 4 and n >= 1900 and n <= 2099
            if not model_no and not money and not year then
                if prev == "#" or is_order_context(low, s) then return digits end
                standalone = standalone or digits
            end
        end
    end
    return standalone
end

--- Whether the mail asks for speed.
-- @tparam string text the mail
-- @treturn boolean
function _M.urgent_of(text)
    return count_words(lower(text), URGENT_WORDS) > 0
end

-- Cut a UTF-8 string to at most n bytes without splitting a character.
local function utf8_cut(s, n)
    if #s <= n then return s end
    local i = n + 1
    while i > 1 do
        local c = byte(s, i)
        if not c or c < 128 or c >= 192 then break end
        i = i - 1
    end
    return sub(s, 1, i - 1)
end

local SUMMARY_LEAD = {
    delivery = "Delivery issue", ["return"] = "Return request", payment = "Payment issue",
    other = "Customer message",
}

--- One short summary sentence: the subject or first sentence of the mail, single line.
-- @tparam string text the mail
-- @tparam string intent the intent
-- @treturn string
function _M.summary_of(text, intent)
    local subject = text:match("^%s*Subject:%s*([^\n]*)")
    local body = subject and subject ~= "" and subject or text
    body = gsub(gsub(body, "%[URL%]", ""), "@[%w_]+", "")
    body = gsub(body, "[%c%s]+", " ")
    body = gsub(gsub(body, "^%s+", ""), "%s+$", "")
    local first = body:match("^(.-[%.!%?])%s") or body
    first = gsub(utf8_cut(first, 120), "[%s%.!%?,;:]+$", "")
    if first == "" then return SUMMARY_LEAD[intent] .. " without details." end
    return SUMMARY_LEAD[intent] .. ": " .. first .. "."
end

local LANG_HINTS = {
    de = { "ich", "und", "nicht", "bitte", "meine", "sehr geehrte", "bestellung", "mit freundlichen" },
    es = { "hola", "estimado", "pedido", "gracias", "por favor", "mi ", "el ", "que " },
    fr = { "bonjour", "je ", "nous", "commande", "merci", "votre", "madame", "monsieur" },
    pt = { "olá", "prezado", "não", "encomenda", "obrigad", "você", "meu ", "por favor" },
}

--- A rough guess of the mail's language.
-- @tparam string text
-- @treturn string "en", "de", "es", "fr" or "pt"
function _M.lang_of(text)
    local low = lower(text)
    local best, score = "en", 1
    for _, lang in ipairs({ "de", "es", "fr", "pt" }) do
        local n = count_words(low, LANG_HINTS[lang])
        if n > score then best, score = lang, n end
    end
    return best
end

local LOCAL_INTENT = {
    de = { delivery = "Lieferung", ["return"] = "Rückgabe", payment = "Zahlung", other = "Sonstiges" },
    es = { delivery = "Envío", ["return"] = "Devolución", payment = "Pago", other = "Otro" },
    fr = { delivery = "Livraison", ["return"] = "Retour", payment = "Paiement", other = "Autre" },
    pt = { delivery = "Entrega", ["return"] = "Devolução", payment = "Pagamento", other = "Outro" },
    en = { delivery = "shipping", ["return"] = "refund", payment = "billing", other = "general" },
}
local LOCAL_YES = { de = "ja", es = "sí", fr = "oui", pt = "sim", en = "yes" }
local LOCAL_NO = { de = "nein", es = "no", fr = "non", pt = "não", en = "no" }

------------------------------------------------------------------------------
-- Writing JSON by hand (fixed key order, so the text is deterministic)
------------------------------------------------------------------------------

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function jstr(s)
    return '"' .. gsub(s, '[%c"\\]', function(c)
        return ESC[c] or format("\\u%04x", byte(c))
    end) .. '"'
end

-- fields: list of {key, json-text}
local function jobj(fields, sep)
    local parts = {}
    for i, f in ipairs(fields) do parts[i] = jstr(f[1]) .. ":" .. (sep or "") .. f[2] end
    return "{" .. concat(parts, "," .. (sep or "")) .. "}"
end

------------------------------------------------------------------------------
-- The ticket contract
------------------------------------------------------------------------------

local TICKET_KEYS = { "intent", "order_id", "urgent", "summary" }

--- Whether a JSON Schema (decoded into Lua) is the support-ticket contract.
-- @tparam table|nil schema
-- @treturn boolean
function _M.is_ticket_schema(schema)
    if type(schema) ~= "table" or type(schema.properties) ~= "table" then return false end
    for _, k in ipairs(TICKET_KEYS) do
        if schema.properties[k] == nil then return false end
    end
    return true
end

--- What a careful reader extracts from the mail.
-- @tparam string text the mail
-- @treturn table {intent=string, order_id=string|nil, urgent=boolean, summary=string, lang=string}
function _M.extract(text)
    local intent = _M.intent_of(text)
    return {
        intent = intent, order_id = _M.order_id_of(text), urgent = _M.urgent_of(text),
        summary = _M.summary_of(text, intent), lang = _M.lang_of(text),
    }
end

local function ticket_json(t, fault, r)
    local lang = t.lang
    local intent = jstr(t.intent)
    local urgent = t.urgent and "true" or "false"
    local order_id = t.order_id and jstr(t.order_id) or "null"
    local fields
    if fault == "intent_language" then
        local l = lang ~= "en" and lang or (r < 0.5 and "de" or "en")
        intent = jstr(LOCAL_INTENT[l][t.intent])
    elseif fault == "urgent_string" then
        urgent = jstr((t.urgent and LOCAL_YES or LOCAL_NO)[r < 0.5 and lang or "en"])
    elseif fault == "order_id_number" and t.order_id then
        order_id = t.order_id
    end
    fields = { { "intent", intent } }
    if not (fault == "order_id_number" and not t.order_id) then
        fields[#fields + 1] = { "order_id", order_id } -- no number to give: the field goes missing
    end
    fields[#fields + 1] = { "urgent", urgent }
    fields[#fields + 1] = { "summary", jstr(t.summary) }
    if fault == "extra_field" then
        fields[#fields + 1] = r < 0.5 and { "mood", jstr("ruhig") } or { "confidence", "0.8" }
    end
    return jobj(fields, r < 0.3 and " " or nil)
end

local function prose_of(t)
    local s = "This message is about " .. (t.intent == "other" and "a general question" or
        ("a " .. t.intent .. " matter"))
    if t.order_id then s = s .. " for order " .. t.order_id end
    return s .. (t.urgent and ", and the customer says it is urgent." or ".") ..
        " " .. t.summary
end

------------------------------------------------------------------------------
-- Any other schema: a plausible minimal valid instance
------------------------------------------------------------------------------

local function resolve(root, s)
    local depth = 0
    while type(s) == "table" and type(s["$ref"]) == "string" and depth < 16 do
        local ref = s["$ref"]
        local node = root
        for part in ref:gmatch("[^/#]+") do
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
    sort(ks)
    return ks
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
        local n = tonumber(s.minItems) or 0
        if n == 0 then return "[]" end
        local items = {}
        for i = 1, math.min(n, 64) do items[i] = minimal(root, s.items or {}, depth + 1) end
        return "[" .. concat(items, ",") .. "]"
    elseif t == "integer" or t == "number" then
        local m = tonumber(s.minimum) or (tonumber(s.exclusiveMinimum) and s.exclusiveMinimum + 1) or 0
        if t == "integer" or m == floor(m) then return format("%d", ceil(m)) end
        return tostring(m)
    elseif t == "boolean" then
        return "false"
    elseif t == "null" then
        return "null"
    end
    local n = tonumber(s.minLength) or 0
    return jstr(rep("x", math.min(n, 4096)))
end

--- A minimal instance of any JSON Schema, as JSON text (first enum value, "", 0, false, [] ...).
-- @tparam table schema decoded JSON Schema
-- @treturn string JSON text
function _M.minimal_json(schema)
    return minimal(schema, schema, 0)
end

------------------------------------------------------------------------------
-- Conversation
------------------------------------------------------------------------------

--- The plain text of a message's content (a string, or a list of text parts).
-- @param content string, or list of {type="text", text=string}
-- @treturn string
function _M.text_of(content)
    if type(content) == "string" then return content end
    if type(content) ~= "table" then return "" end
    local parts = {}
    for _, p in ipairs(content) do
        if type(p) == "string" then
            parts[#parts + 1] = p
        elseif type(p) == "table" and type(p.text) == "string" then
            parts[#parts + 1] = p.text
        end
    end
    return concat(parts, "\n")
end

--- Token estimate as the lesson counts: words x 1.3, rounded up.
-- @tparam string text
-- @treturn integer tokens
function _M.tokens(text)
    local n = 0
    for _ in tostring(text or ""):gmatch("%S+") do n = n + 1 end
    return floor((n * 13 + 9) / 10)
end

local function is_vague(t, low)
    if t.intent ~= "other" or t.order_id then return false end
    local words = 0
    for _ in low:gmatch("%S+") do words = words + 1 end
    if words > 6 or count_words(low, ORDER_WORDS) > 0 then return false end
    return count_words(low, VAGUE_WORDS) > 0
end

local function pick_first(u)
    local acc = 1
    for _, f in ipairs(FAULTS_FIRST) do acc = acc - f[2] end
    if u < acc then return nil end
    for _, f in ipairs(FAULTS_FIRST) do
        acc = acc + f[2]
        if u < acc then return f[1] end
    end
    return FAULTS_FIRST[#FAULTS_FIRST][1]
end

local function fault_for(seed, mail, attempt)
    if attempt <= 1 then return pick_first(_M.draw(seed, mail, 1, "fault")) end
    local u = _M.draw(seed, mail, attempt, "fix")
    if u < FIX_RATE then return nil end
    if u < FIX_RATE + (1 - FIX_RATE) / 2 then
        local prev = fault_for(seed, mail, attempt - 1)
        if prev ~= "refusal" and prev ~= "truncated" then return prev end
    end
    local v = _M.draw(seed, mail, attempt, "other")
    return FAULTS_RETRY[floor(v * #FAULTS_RETRY) + 1]
end

local function cut(text, r)
    local n = floor(#text * (0.3 + 0.5 * r))
    if n < 1 then n = 1 end
    return utf8_cut(text, n)
end

-- Keep the output within a token budget; a cut answer becomes "truncated".
local function budget(ans, max_tokens)
    max_tokens = tonumber(max_tokens)
    if not max_tokens or not ans.text or _M.tokens(ans.text) <= max_tokens then return ans end
    local words, out = 0, {}
    local words_fit = floor(max_tokens * 10 / 13)
    for w, sp in ans.text:gmatch("(%S+)(%s*)") do
        if words >= words_fit then break end
        words = words + 1
        out[#out + 1] = w .. sp
    end
    ans.text = gsub(concat(out), "%s+$", "")
    ans.kind, ans.fault = "truncated", "truncated"
    return ans
end

--- The model's answer to a conversation.
-- @tparam table request the conversation, provider-neutral:
--   `messages` (list of {role="user"|"assistant", content=string or text parts}; the first user
--   message is the mail, verbatim), `system` (string or nil), `schema` (decoded JSON Schema or nil),
--   `max_tokens` (integer output budget in tokens, or nil)
-- @tparam[opt] table opts `seed` (integer, default 1)
-- @treturn table answer: `kind` ("json" = a valid ticket, "invalid" = JSON that breaks the schema,
--   "fenced", "prose", "refusal", "truncated"), `text` (string, nil for a refusal), `fault` (nil
--   when clean, else "fenced", "intent_language", "urgent_string", "extra_field",
--   "order_id_number" (or the field missing when the mail has no number), "refusal", "truncated",
--   "prose", "scripted"), `attempt` (integer), `mail` (string)
-- @raise when request is not a table
-- @usage local a = model.answer({ messages = { { role = "user", content = mail } } }, { seed = 7 })
function _M.answer(request, opts)
    if type(request) ~= "table" then error("request must be a table", 2) end
    local seed = opts and opts.seed or 1
    local messages = type(request.messages) == "table" and request.messages or {}
    local mail, attempt = nil, 1
    for _, m in ipairs(messages) do
        if type(m) == "table" then
            if m.role == "assistant" then
                attempt = attempt + 1
            elseif m.role == "user" and not mail then
                mail = _M.text_of(m.content)
            end
        end
    end
    mail = mail or ""
    local schema = request.schema
    local ticket = _M.is_ticket_schema(schema)
    if schema == nil then
        local sys = lower(_M.text_of(request.system))
        ticket = find(sys, "intent", 1, true) ~= nil and find(sys, "order_id", 1, true) ~= nil
    end
    local ans = { attempt = attempt, mail = mail }

    if find(mail, "[[refuse]]", 1, true) then
        ans.kind, ans.fault = "refusal", "refusal"
        return ans
    end
    if not ticket then
        ans.kind, ans.text = "json", _M.minimal_json(type(schema) == "table" and schema or {})
        return budget(ans, request.max_tokens)
    end

    local t = _M.extract(mail)
    local low = lower(mail)
    if find(mail, "[[truncate]]", 1, true) then
        ans.kind, ans.fault = "truncated", "truncated"
        ans.text = cut(ticket_json(t, nil, 0.5), 0.5)
        return ans
    end
    if find(mail, "%f[%d]1042%f[%D]") and (has_word(low, "courier") or t.intent == "delivery") then
        t.intent, t.order_id, t.urgent = "delivery", "1042", true
        if attempt == 1 then
            ans.kind, ans.fault = "invalid", "scripted"
            ans.text = jobj({ { "intent", jstr("Lieferung") }, { "order_id", jstr("1042") },
                { "urgent", jstr("ja") }, { "summary", jstr(t.summary) } })
            return ans
        end
        ans.kind, ans.text = "json", ticket_json(t, nil, 0.5)
        return budget(ans, request.max_tokens)
    end
    if find(mail, "%f[%d]1187%f[%D]") and t.intent == "return" then
        t.order_id, t.urgent = "1187", false
        ans.kind, ans.text = "json", ticket_json(t, nil, 0.5)
        return budget(ans, request.max_tokens)
    end
    if is_vague(t, low) then
        ans.kind, ans.fault, ans.text = "prose", "scripted", _M.ASK_MORE_TEXT
        return ans
    end

    local fault = fault_for(seed, mail, attempt)
    local r = _M.draw(seed, mail, attempt, "style")
    local clean = ticket_json(t, nil, r)
    ans.fault = fault
    if fault == nil then
        ans.kind, ans.text = "json", clean
    elseif fault == "fenced" then
        ans.kind = "fenced"
        ans.text = (r < 0.5 and "Sure! Here is the data:\n\n" or "") .. "```json\n" .. clean .. "\n```"
    elseif fault == "refusal" then
        ans.kind = "refusal"
    elseif fault == "truncated" then
        ans.kind, ans.text = "truncated", cut(clean, r)
    elseif fault == "prose" then
        ans.kind, ans.text = "prose", prose_of(t)
    else
        ans.kind, ans.text = "invalid", ticket_json(t, fault, r)
    end
    return budget(ans, request.max_tokens)
end

------------------------------------------------------------------------------
-- Wire bodies -> provider-neutral requests
------------------------------------------------------------------------------

--- The conversation in an OpenAI Chat Completions request body.
-- @tparam table body decoded request body
-- @treturn table request for `answer`
function _M.from_openai(body)
    local messages, system = {}, {}
    for _, m in ipairs(type(body.messages) == "table" and body.messages or {}) do
        if type(m) == "table" then
            if m.role == "system" or m.role == "developer" then
                system[#system + 1] = _M.text_of(m.content)
            else
                messages[#messages + 1] = m
            end
        end
    end
    local rf = body.response_format
    local schema = type(rf) == "table" and type(rf.json_schema) == "table" and rf.json_schema.schema or nil
    return {
        messages = messages, system = concat(system, "\n"),
        schema = type(schema) == "table" and schema or nil,
        max_tokens = tonumber(body.max_completion_tokens) or tonumber(body.max_tokens),
    }
end

--- The conversation in an Anthropic Messages request body (`output_config.format` or the
-- older `output_format`).
-- @tparam table body decoded request body
-- @treturn table request for `answer`
function _M.from_anthropic(body)
    local fmt = type(body.output_config) == "table" and body.output_config.format or body.output_format
    local schema = type(fmt) == "table" and fmt.schema or nil
    return {
        messages = type(body.messages) == "table" and body.messages or {},
        system = _M.text_of(body.system),
        schema = type(schema) == "table" and schema or nil,
        max_tokens = tonumber(body.max_tokens),
    }
end

--- Input tokens of a request: all message contents and the system prompt, words x 1.3.
-- @tparam table request as for `answer`
-- @treturn integer tokens
function _M.input_tokens(request)
    local parts = { _M.text_of(request.system) }
    for _, m in ipairs(request.messages or {}) do
        if type(m) == "table" then parts[#parts + 1] = _M.text_of(m.content) end
    end
    return _M.tokens(concat(parts, " "))
end

return _M
