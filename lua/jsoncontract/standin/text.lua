--- The stand-in's reading and writing of text: words, languages, first sentences, token
-- counts, and JSON written by hand (fixed key order, so the text is deterministic). Pure Lua:
-- the stand-in runs without the C core.
-- @module jsoncontract.standin.text
local u8 = require "jsoncontract.utf8"

local floor, ceil, max = math.floor, math.ceil, math.max
local byte, find, gsub, lower, format = string.byte, string.find, string.gsub, string.lower, string.format
local concat = table.concat
local ipairs, type, tostring = ipairs, type, tostring

local _M = { _VERSION = "0.1.0" }

--- Cut a UTF-8 string to at most n bytes without splitting a character.
_M.utf8_cut = u8.cut
--- Code points in a UTF-8 string.
_M.ulen = u8.len
--- The first n code points of a UTF-8 string.
_M.uprefix = u8.prefix

--- True when the lowercased text holds `word` at the start of a word.
-- @tparam string low lowercased text
-- @tparam string word
-- @treturn boolean
function _M.has_word(low, word)
    local c = byte(word, 1)
    if c and ((c >= 97 and c <= 122) or (c >= 48 and c <= 57)) then
        return find(low, "%f[%w]" .. gsub(word, "%p", "%%%0")) ~= nil
    end
    return find(low, word, 1, true) ~= nil
end

--- How many words of `list` the lowercased text holds (see `has_word`).
-- @tparam string low
-- @tparam table list
-- @treturn integer
function _M.count_words(low, list)
    local n = 0
    for _, w in ipairs(list) do
        if _M.has_word(low, w) then n = n + 1 end
    end
    return n
end

--- Where `word` starts in `low` as a word; a short ASCII word (api, rag, app) only as a whole
-- word or with a plural s, so "rage" is not RAG and "apple" is not an app.
-- @tparam string low
-- @tparam string word
-- @treturn integer|nil byte position
function _M.word_at(low, word)
    local c = byte(word, 1)
    if c and c < 128 and find(word, "^%w+$") and #word <= 4 then
        return (find(low, "%f[%w]" .. word .. "s?%f[%W]"))
    end
    return _M.has_word(low, word) and find(low, word, 1, true) or nil
end

--- How many words of `list` occur (see `word_at`), and where the first one starts.
-- @tparam string low
-- @tparam table list
-- @treturn integer count
-- @treturn integer|nil position
function _M.count_in(low, list)
    local n, first = 0, nil
    for _, w in ipairs(list) do
        local s = _M.word_at(low, w)
        if s then
            n = n + 1
            if not first or s < first then first = s end
        end
    end
    return n, first
end

--- The first sentence of a text on one line, at most ~120 bytes, ending with a full stop.
-- @tparam string text
-- @treturn string|nil
function _M.first_sentence(text)
    local body = gsub(gsub(text, "[%c%s]+", " "), "^%s+", "")
    body = gsub(body, "%s+$", "")
    local first = body:match("^(.-[%.!%?])%s") or body
    first = gsub(u8.cut(first, 120), "[%s%.!%?,;:]+$", "")
    if first == "" then return nil end
    return first .. "."
end

local LANG_HINTS = {
    de = { "ich", "und", "nicht", "bitte", "meine", "sehr geehrte", "bestellung", "mit freundlichen" },
    es = { "hola", "estimado", "pedido", "gracias", "por favor", "mi ", "el ", "que " },
    fr = { "bonjour", "je ", "nous", "commande", "merci", "votre", "madame", "monsieur" },
    pt = { "olá", "prezado", "não", "encomenda", "obrigad", "você", "meu ", "por favor" },
}

--- A rough guess of the text's language.
-- @tparam string text
-- @treturn string "en", "de", "es", "fr" or "pt"
function _M.lang_of(text)
    local low = lower(text)
    local best, score = "en", 1
    for _, lang in ipairs({ "de", "es", "fr", "pt" }) do
        local n = _M.count_words(low, LANG_HINTS[lang])
        if n > score then best, score = lang, n end
    end
    return best
end

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

--- Output tokens as the max_tokens cut-off counts them: the larger of `tokens` (words x 1.3)
-- and one token per 4 bytes, so one long unbroken string is not "2 tokens". Usage reports
-- keep `tokens`.
-- @tparam string text
-- @treturn integer tokens
function _M.cutoff_tokens(text)
    text = tostring(text or "")
    return max(_M.tokens(text), ceil(#text / 4))
end

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

--- A JSON string literal.
-- @tparam string s
-- @treturn string
function _M.jstr(s)
    return '"' .. gsub(s, '[%c"\\]', function(c)
        return ESC[c] or format("\\u%04x", byte(c))
    end) .. '"'
end

--- A JSON object from `{key, json-text}` fields, in that order.
-- @tparam table fields
-- @tparam[opt] string sep written after ":" and ","
-- @treturn string
function _M.jobj(fields, sep)
    local parts = {}
    for i, f in ipairs(fields) do parts[i] = _M.jstr(f[1]) .. ":" .. (sep or "") .. f[2] end
    return "{" .. concat(parts, "," .. (sep or "")) .. "}"
end

return _M
