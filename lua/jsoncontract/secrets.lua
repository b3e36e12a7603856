--- What may leave a run: the one redaction of the API key and the text hygiene every
-- string gets before it reaches an outcome, an error, a pointer, the evidence or stdout.
--
-- A server between us and the model (a proxy, a compromised gateway) can echo the key in
-- any spelling that decodes back to it somewhere down the line: plain, JSON `\u` escapes
-- (`\u0073k-...`, upper or lower hex, mixed with plain characters, one escape per
-- character or several), JSON short escapes (`\/`), escapes of escapes (`\\u0073`, as a
-- JSON string inside a JSON string carries them), percent-encoding (`%73k-...`, also
-- `%5Cu0073`), JSON Pointer escapes (`~1`), HTML numeric character references (`&#115;`,
-- `&#x73;`, as an HTML error page from a proxy quotes a header). `redact` finds the key in every such spelling,
-- in raw bytes and in decoded text alike, and replaces the whole spelling by "[redacted]".
-- Text is never decoded to find it, so what is not the key stays byte for byte.
--
-- Two more shapes a server echoes: the key split across two adjacent string literals
-- (`"sk-ab" "cd"`, `["sk-ab","cd"]`, `"sk-ab" + "cd"`; see `redact`), and the key inside
-- base64 or base64url (RFC 4648 sections 4 and 5), as an echoed `Authorization: Basic`
-- header carries `user:key`: the key may sit at any of the 3 byte alignments of the encoded
-- text, so each alignment's characters that only the key determines are looked for, in both
-- alphabets, with the one or two characters it shares with its neighbours and any `=`
-- padding.
-- @module jsoncontract.secrets
local core = require "jsoncontract.core"
local seq_len = require("jsoncontract.utf8").seq_len

local ipairs = ipairs
local type, pairs, next, tostring, setmetatable, getmetatable, pcall, rawget =
    type, pairs, next, tostring, setmetatable, getmetatable, pcall, rawget
local byte, sub, find, format, lower, gsub = string.byte, string.sub, string.find, string.format,
    string.lower, string.gsub
local concat = table.concat
local floor = math.floor
local error_fields = core.error_fields

local _M = { _VERSION = core._VERSION }

-- forward declaration: the base64 spellings of a key (below)
local base64_cores

--- What replaces a secret.
_M.REDACTED = "[redacted]"

-- Shortest secret looked for: shorter "keys" would redact ordinary words.
local MIN_SECRET = 4
-- Shortest key whose base64 spellings are looked for: 8 bytes give at least 10 characters
-- that only the key determines, no accident in ordinary base64 text.
local MIN_BASE64_SECRET = 8
-- How many layers of encoding one character may hide under (`%5Cu0073` is two: percent
-- over JSON). Three covers a JSON string in a JSON string in a URL.
local MAX_LAYERS = 3

local B_BACKSLASH, B_PERCENT, B_U, B_TILDE, B_AMP, B_HASH, B_SEMI = 92, 37, 117, 126, 38, 35, 59
-- Digits an HTML character reference may carry here (`&#0000115;` is still "s"; a longer
-- run is no character this redaction looks for).
local MAX_REF_DIGITS = 8

local HEX = {}
for i = 0, 9 do HEX[48 + i] = i end
for i = 0, 5 do HEX[65 + i] = 10 + i; HEX[97 + i] = 10 + i end

local decode

-- A hex digit spelled at `i` (plain, or encoded under `layers` layers): value, next index.
local function hex_at(text, i, layers)
    local v, j = decode(text, i, layers)
    local d = v and HEX[v]
    if d then return d, j end
    return nil
end

-- `n` hex digits from `i`: their value and the index after them, or nil.
local function hex_run(text, i, n, layers)
    local v = 0
    for _ = 1, n do
        local d
        d, i = hex_at(text, i, layers)
        if not d then return nil end
        v = v * 16 + d
    end
    return v, i
end

local SHORT = { [34] = 34, [47] = 47, [92] = 92, [98] = 8, [102] = 12, [110] = 10, [114] = 13, [116] = 9 }

-- A character `v` that decoding one layer produced at `j`; when it is an introducer ('\'
-- or '%') it starts an escape of the next layer out (`\\u0073`, `%5Cu0073`), whose
-- remaining characters follow from `j`.
local function resume(v, text, j, layers)
    if layers <= 0 then return v, j end
    if v == B_BACKSLASH then
        local c, k = decode(text, j, layers - 1)
        if c == B_U then
            local w, e = hex_run(text, k, 4, layers - 1)
            if w then return resume(w, text, e, layers - 1) end
        elseif c and SHORT[c] and c ~= B_BACKSLASH then
            return SHORT[c], k
        end
    elseif v == B_PERCENT then
        local w, e = hex_run(text, j, 2, layers - 1)
        if w then return resume(w, text, e, layers - 1) end
    end
    return v, j
end

-- An HTML numeric character reference's digits from `i` (after "&#"): decimal, or hex after
-- "x"/"X" (HTML Living Standard, "numeric character reference"); the ';' that ends it may be
-- missing, as browsers accept. Its code point and the index after it, or nil. The digits
-- are plain: read through other encodings, "&#X53" then "&#x45;" (an "E") would run on.
local function char_ref(text, i)
    local base, v, digits = 10, 0, 0
    local c = byte(text, i)
    if c == 120 or c == 88 then base, i = 16, i + 1 end
    while digits < MAX_REF_DIGITS do
        local d = HEX[byte(text, i) or 0]
        if not d or d >= base then break end
        v, i, digits = v * base + d, i + 1, digits + 1
    end
    if digits == 0 then return nil end
    if byte(text, i) == B_SEMI then i = i + 1 end
    return v, i
end

-- The character spelled at `i`, decoding at most `layers` layers of JSON string escapes,
-- percent-encoding, JSON Pointer escapes and HTML numeric character references: its byte
-- value (a code point for a reference) and the index after it.
function decode(text, i, layers)
    local b = byte(text, i)
    if b == nil then return nil end
    if layers <= 0 then return b, i + 1 end
    if b == B_PERCENT then
        local v, j = hex_run(text, i + 1, 2, layers - 1)
        if v then return resume(v, text, j, layers - 1) end
    elseif b == B_BACKSLASH then
        local c = byte(text, i + 1)
        if c == B_U then
            local v, j = hex_run(text, i + 2, 4, layers - 1)
            if v then return resume(v, text, j, layers - 1) end
        elseif c == B_BACKSLASH then
            return resume(B_BACKSLASH, text, i + 2, layers - 1)
        elseif c and SHORT[c] then
            return SHORT[c], i + 2
        end
    elseif b == B_TILDE then
        local c = byte(text, i + 1)
        if c == 49 then return 47, i + 2 end
        if c == 48 then return B_TILDE, i + 2 end
    elseif b == B_AMP and byte(text, i + 1) == B_HASH then
        local v, j = char_ref(text, i + 2)
        if v then return v, j end
    end
    return b, i + 1
end

-- Does the text at `i` spell the byte `want`? The index after the spelling, or nil.
local function match_byte(text, i, want, layers)
    local b = byte(text, i)
    if b == want then return i + 1 end
    if b ~= B_BACKSLASH and b ~= B_PERCENT and b ~= B_TILDE and b ~= B_AMP then return nil end
    local v, j = decode(text, i, layers)
    if v == want then return j end
    return nil
end

-- The end of a string literal and the start of the next one at `i`: a quote (`"` or `'`,
-- spelled as `decode` reads it), spaces, at most one `,` or `+`, spaces, the same quote.
-- The index after the second quote, or nil.
local function joiner(text, i)
    local q, j = decode(text, i, MAX_LAYERS)
    if q ~= 34 and q ~= 39 then return nil end
    local sep = false
    while true do
        local c, k = decode(text, j, MAX_LAYERS)
        if c == q then return k end
        if c == 44 or c == 43 then
            if sep then return nil end
            sep = true
        elseif c ~= 32 and c ~= 9 and c ~= 10 and c ~= 13 then
            return nil
        end
        j = k
    end
end

-- The end of a spelling of `secret` starting at `i`, or nil. One joiner (see `joiner`) may
-- split it between two of its bytes.
local function match_secret(text, i, secret, n)
    local j = i
    local split = false
    for k = 1, n do
        local e = match_byte(text, j, byte(secret, k), MAX_LAYERS)
        if not e and k > 1 and not split then
            local after = joiner(text, j)
            if after then
                split = true
                e = match_byte(text, after, byte(secret, k), MAX_LAYERS)
            end
        end
        if not e then return nil end
        j = e
    end
    return j
end

-- Could `text` hold an encoded spelling at all? (Saves the slow scan on clean text.) false:
-- no; "short": its only escapes are JSON short escapes one layer deep (`\"`, `\n`, `\/`: no
-- `\u`, `\\`, `%`, `~` or `&`, as in a model's JSON inside a JSON envelope), which spell only
-- the bytes in SHORT_PAIRS; true: any spelling may be there.
-- (Plain finds: a pattern's character class costs a C loop step per byte of a long body.)
local function has_escapes(text)
    if find(text, "%", 1, true) or find(text, "~", 1, true) or find(text, "&", 1, true)
        or find(text, "\\u", 1, true) or find(text, "\\\\", 1, true) then
        return true
    end
    return find(text, "\\", 1, true) and "short" or false
end

-- Each JSON short escape and the byte it spells (SHORT but `\\`, which makes has_escapes true).
local SHORT_PAIRS = { { '\\"', '"' }, { "\\/", "/" }, { "\\b", "\b" }, { "\\f", "\f" }, { "\\n", "\n" },
    { "\\r", "\r" }, { "\\t", "\t" } }

-- What the scans need to know of one secret (or base64 core), worked out once per secret:
-- `shorts`, the JSON short escapes spelling one of its bytes (a base64 core may hold "/");
-- `head`/`tail`, its halves (what a split spelling keeps whole on one side); `starts`, the
-- pattern of a spelling's first byte. Kept per secret (a run has one or two, and their cores).
local prep_cache, prep_count = {}, 0
local function prepared(secret)
    local p = prep_cache[secret]
    if p then return p end
    local shorts = {}
    for i = 1, #SHORT_PAIRS do
        local pair = SHORT_PAIRS[i]
        if find(secret, pair[2], 1, true) then shorts[#shorts + 1] = pair[1] end
    end
    local h = floor(#secret / 2)
    local starts = "[%" .. sub(secret, 1, 1) .. "\\%%~&]"
    if sub(secret, 1, 1):match("%w") then starts = "[" .. sub(secret, 1, 1) .. "\\%%~&]" end
    p = { shorts = shorts, head = sub(secret, 1, h), tail = sub(secret, h + 1), starts = starts }
    if prep_count >= 256 then prep_cache, prep_count = {}, 0 end
    prep_cache[secret], prep_count = p, prep_count + 1
    return p
end

-- Does `text` (whose escapes are short ones only) hold a short escape of a byte of the
-- secret whose `prepared` facts are `p`?
local function short_spells(text, p)
    local shorts = p.shorts
    for i = 1, #shorts do
        if find(text, shorts[i], 1, true) then return true end
    end
    return false
end

local B64_CHAR = {}
for c in ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_"):gmatch(".") do
    B64_CHAR[byte(c)] = true
end

-- Replace every spelling of one secret. `ext` (base64 cores only): `left`/`right` say that
-- the character before / after the core also carries bits of the key; it goes too, and so
-- does the `=` padding after. `escapes`: `has_escapes(text)`.
local function redact_one(text, secret, ext, escapes)
    local n = #secret
    local p = prepared(secret)
    -- short escapes that spell none of the secret's bytes can only be a joiner's quote: the
    -- secret's own bytes are plain then (what the check below looks for)
    if escapes == "short" and not short_spells(text, p) then escapes = false end
    if not escapes and not find(text, secret, 1, true) then
        -- Plain text can still hold the key split in two (not a base64 run: nothing a server does
        -- splits one); one half holds its first or its second half.
        if ext or not (find(text, '"', 1, true) or find(text, "'", 1, true)) then return text end
        if not find(text, p.head, 1, true) and not find(text, p.tail, 1, true) then
            return text
        end
    end
    -- A spelling starts with the first byte or with an introducer of an encoding: jump
    -- from one such byte to the next (string.find runs in C).
    local starts = p.starts
    local first = byte(secret, 1)
    local parts, from = {}, 1
    local i = find(text, starts)
    while i do
        local j
        local b, c = byte(text, i, i + 1)
        -- Most candidates are ordinary escapes (`\"`, `\n`) or a '%' or '~' that cannot
        -- spell the first character: skip those without the full match.
        if b == first or (b == B_BACKSLASH and (c == B_U or c == B_BACKSLASH or SHORT[c] == first))
            or (b == B_PERCENT and c and HEX[c]) or (b == B_TILDE and (first == 47 or first == B_TILDE))
            or (b == B_AMP and c == B_HASH) then
            j = match_secret(text, i, secret, n)
        end
        if j then
            if ext then
                if ext.left and i > from and B64_CHAR[byte(text, i - 1)] then i = i - 1 end
                if ext.right and B64_CHAR[byte(text, j)] then j = j + 1 end
                for _ = 1, 2 do if byte(text, j) == 61 then j = j + 1 end end
            end
            parts[#parts + 1] = sub(text, from, i - 1)
            parts[#parts + 1] = _M.REDACTED
            from = j
            i = find(text, starts, j)
        else
            i = find(text, starts, i + 1)
        end
    end
    if from == 1 then return text end
    parts[#parts + 1] = sub(text, from)
    return concat(parts)
end

--- Replace every spelling of a secret (an API key) in a text by "[redacted]".
-- The one redaction used by the attempt loop, the evidence writer, the CLI and the
-- errors module: plain bytes, JSON `\u`/short escapes (mixed, escapes of escapes),
-- percent-encoding, JSON Pointer escapes and HTML numeric character references, in any mix
-- per character; split once, between any two of its bytes, across two adjacent string
-- literals (a `"` or `'` closing the first, then only spaces, tabs, newlines and at most one
-- `,` or `+`, then the same quote opening the second: `"sk-ab" "cd"`, `["sk-ab","cd"]`,
-- `'sk-ab' + 'cd'`; the whole spelling, both quotes included, becomes one "[redacted]");
-- and, for a secret of at least 8 bytes, inside base64 or base64url text (standard or
-- URL-safe alphabet, padded or not, at any of the 3 alignments, so also `user:key` as Basic
-- auth encodes it, for any user).
-- @param text any value; only strings are changed
-- @tparam string|table|nil secret plain bytes (not a pattern), or a list of them; nil or
--   shorter than 4 bytes: no change
-- @return the text without the secret (other values as given)
-- @usage secrets.redact('{"k":"\\u0073k-abcd"}', "sk-abcd") --> '{"k":"[redacted]"}'
function _M.redact(text, secret)
    if type(text) ~= "string" then return text end
    if type(secret) == "table" then
        for _, s in pairs(secret) do text = _M.redact(text, s) end
        return text
    end
    if type(secret) ~= "string" or #secret < MIN_SECRET then return text end
    -- Every spelling takes at least one byte per byte of the key (or of a base64 core): a
    -- shorter text (a header value, a model name) holds none.
    local n = #text
    if n < #secret and (#secret < MIN_BASE64_SECRET or n < base64_cores(secret).shortest) then return text end
    -- (a redaction adds no escape, so one look serves every scan)
    local escapes = has_escapes(text)
    text = redact_one(text, secret, nil, escapes)
    if #secret >= MIN_BASE64_SECRET then
        for _, c in ipairs(base64_cores(secret)) do text = redact_one(text, c.core, c, escapes) end
    end
    return text
end

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

--- Base64 of a byte string (RFC 4648 section 4, standard alphabet, with padding).
-- @tparam string s
-- @tparam[opt] boolean url the URL-safe alphabet (section 5: `-` and `_`), without padding
-- @treturn string
function _M.base64(s, url)
    local out = {}
    for i = 1, #s, 3 do
        local a, b, c = byte(s, i, i + 2)
        local v = a * 65536 + (b or 0) * 256 + (c or 0)
        local n = c and 4 or (b and 3 or 2)
        for k = 1, 4 do
            local d = floor(v / 2 ^ (6 * (4 - k))) % 64
            out[#out + 1] = k <= n and sub(B64, d + 1, d + 1) or "="
        end
    end
    local text = concat(out)
    if url then text = gsub(gsub(gsub(text, "%+", "-"), "/", "_"), "=", "") end
    return text
end

-- The characters of the key's base64 at each alignment (the key after 0, 1 or 2 other bytes)
-- that only the key determines, in both alphabets: `{core =, left =, right =}`, left/right
-- when a character shared with the neighbours is next to it. Kept per key (a run has one or two).
local cores_cache, cores_count = {}, 0
function base64_cores(secret)
    local list = cores_cache[secret]
    if list then return list end
    list = {}
    local seen, n = {}, #secret
    for a = 0, 2 do
        local enc = _M.base64(("\0"):rep(a) .. secret)
        local first = a == 0 and 0 or (a == 1 and 2 or 3)
        local last = floor(8 * (a + n) / 6) - 1
        local core_std = sub(enc, first + 1, last + 1)
        for _, c in ipairs { core_std, (gsub(gsub(core_std, "%+", "-"), "/", "_")) } do
            if not seen[c] then
                seen[c] = true
                list[#list + 1] = { core = c, left = a ~= 0, right = (a + n) % 3 ~= 0 }
            end
        end
    end
    -- the shortest core: no base64 spelling of the key is shorter
    local shortest = math.huge
    for _, c in ipairs(list) do shortest = math.min(shortest, #c.core) end
    list.shortest = shortest
    if cores_count >= 64 then cores_cache, cores_count = {}, 0 end
    cores_cache[secret], cores_count = list, cores_count + 1
    return list
end

--- Text a server sent (a provider's error message, a body quoted in an err), made fit to
-- show: the known secret redacted in every spelling (`redact`), then whatever looks like a
-- credential masked, since a provider may echo a key we do not hold (another tenant's, an
-- Authorization header from a proxy): "Bearer <token>", "sk-..." (OpenAI, Anthropic
-- "sk-ant-..."), "AIza..." (Google), and any run of 24 or more letters, digits, "-" and "_"
-- that mixes letters and digits. For foreign text only: on our own records (request ids,
-- schema hashes) the last rule would mask what must stay; those get `redact`.
-- @param text any value; only strings are changed
-- @tparam[opt] string|table secret as for `redact`
-- @return the text without the secret or anything credential-like
-- @usage secrets.redact_credentials("Incorrect API key provided: sk-abc123", key)
--   --> "Incorrect API key provided: sk-[redacted]"
function _M.redact_credentials(text, secret)
    if type(text) ~= "string" then return text end
    text = _M.redact(text, secret)
    text = gsub(text, "([Bb]earer)%s+%S+", "%1 " .. _M.REDACTED)
    text = gsub(text, "sk%-[%w%-_%*%.]+", "sk-" .. _M.REDACTED)
    text = gsub(text, "AIza[%w%-_]+", "AIza" .. _M.REDACTED)
    text = gsub(text, "[%w%-_]+", function(w)
        if #w >= 24 and find(w, "%d") and find(w, "%a") then return _M.REDACTED end
        return nil
    end)
    return text
end

-- Does any string in `v` (keys too, at any depth, an err's fields included) spell the secret?
-- `least`: the shortest text that can (see `least_text`): shorter keys and values, most of
-- them, are passed without a call.
local function holds(v, secret, seen, least)
    if type(v) == "string" then return #v >= least and _M.redact(v, secret) ~= v end
    if type(v) ~= "table" or seen[v] then return false end
    seen[v] = true
    -- (an err has a metatable: a plain table is not asked, which costs a C call)
    local fields = getmetatable(v) ~= nil and error_fields(v)
    if fields then return holds(fields, secret, seen, least) end
    for k, x in next, v do
        if (type(k) ~= "string" or #k >= least) and holds(k, secret, seen, least) then return true end
        if (type(x) ~= "string" or #x >= least) and holds(x, secret, seen, least) then return true end
    end
    return false
end

-- The shortest text that may hold a spelling of `secret` (as `redact` decides it: every
-- spelling takes at least one byte per byte of the key or of a base64 core); 0 for a list.
local function least_text(secret)
    if type(secret) ~= "string" then return 0 end
    if #secret < MIN_SECRET then return math.huge end
    if #secret < MIN_BASE64_SECRET then return #secret end
    return math.min(#secret, base64_cores(secret).shortest)
end

local function copy_redacted(v, secret, seen)
    if type(v) == "string" then return _M.redact(v, secret) end
    if type(v) ~= "table" then return v end
    if seen[v] then return seen[v] end
    local fields = error_fields(v)
    if fields then
        local out = core.error(copy_redacted(fields, secret, seen))
        seen[v] = out
        return out
    end
    local out = {}
    seen[v] = out
    for k, x in next, v do
        local k2 = k
        if type(k) == "string" then
            k2 = _M.redact(k, secret)
            if k2 ~= k then
                local base, n = k2, 1
                while rawget(v, k2) ~= nil or out[k2] ~= nil do n = n + 1; k2 = base .. "#" .. n end
            end
        end
        out[k2] = copy_redacted(x, secret, seen)
    end
    local mt = getmetatable(v)
    if mt ~= nil then setmetatable(out, mt) end
    return out
end

--- A value with the secret redacted from every string in it, keys included (a key that
-- becomes equal to another gets a numbered suffix so nothing is lost): the value itself when
-- no string in it spells the secret (nothing is copied to be looked at), else a copy.
-- Metatables are kept; an err comes back as a new err made from its redacted fields (so its
-- text, `err[1]`, is rendered anew). Tables met twice (or cycles) are copied once.
-- @param v any value
-- @tparam string|table|nil secret as for `redact`
-- @return `v`, or its redacted copy
function _M.redact_value(v, secret)
    if type(v) == "string" then return _M.redact(v, secret) end
    if type(v) ~= "table" or secret == nil or not holds(v, secret, {}, least_text(secret)) then return v end
    return copy_redacted(v, secret, {})
end

--- The response headers a record may keep (lower-case names): the provider's request id (what
-- its support asks for) and what it said about waiting. Every other header, and every request
-- header (`authorization`, `x-api-key`, `x-goog-api-key`, cookies), is never recorded.
_M.RECORDED_HEADERS = {
    ["x-request-id"] = true, ["request-id"] = true, ["retry-after"] = true, ["retry-after-ms"] = true,
    ["x-ratelimit-remaining-requests"] = true, ["x-ratelimit-remaining-tokens"] = true,
    ["x-ratelimit-reset-requests"] = true, ["x-ratelimit-reset-tokens"] = true,
}

--- The one decision of which headers reach evidence or a log: those of a response named in
-- `RECORDED_HEADERS` (names lower-cased), each value with the secret redacted, made valid
-- UTF-8 and elided to 200 bytes. Used by the exchange as a response comes in and by both
-- evidence writers on every record.
-- @tparam table|nil headers name -> value (other types are skipped)
-- @tparam[opt] string|table secret as for `redact`
-- @treturn table|nil the headers to record, or nil when none is left
function _M.recorded_headers(headers, secret)
    if type(headers) ~= "table" then return nil end
    local out
    for k, v in pairs(headers) do
        if type(k) == "string" and type(v) == "string" then
            local name = lower(k)
            if _M.RECORDED_HEADERS[name] then
                out = out or {}
                out[name] = _M.elide(_M.utf8(_M.redact(v, secret)), 200)
            end
        end
    end
    return out
end

----------------------------------------------------------------------------
-- Text hygiene: valid UTF-8, bounded, credentials out of URLs
----------------------------------------------------------------------------

local REPLACEMENT = "\239\191\189" -- U+FFFD

--- The text as valid UTF-8: every byte that does not start a well-formed UTF-8 sequence
-- (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF) becomes U+FFFD.
-- @tparam string s
-- @treturn string s itself when already valid
function _M.utf8(s)
    if type(s) ~= "string" then return s end
    if not find(s, "[\128-\255]") then return s end
    local out, from, i, n, bad = {}, 1, 1, #s, false
    while i <= n do
        local len = seq_len(s, i)
        if len then
            i = i + len
        else
            out[#out + 1] = sub(s, from, i - 1)
            out[#out + 1] = REPLACEMENT
            bad = true
            i = i + 1
            from = i
        end
    end
    if not bad then return s end
    out[#out + 1] = sub(s, from)
    return concat(out)
end

-- Back `i` up to the start of a UTF-8 character (never past `lo`).
local function char_start(s, i, lo)
    while i > lo do
        local c = byte(s, i)
        if c == nil or c < 0x80 or c >= 0xC0 then break end
        i = i - 1
    end
    return i
end

local function thousands(n)
    local s = tostring(floor(n))
    local out = s:reverse():gsub("(%d%d%d)", "%1,"):reverse()
    if out:sub(1, 1) == "," then out = out:sub(2) end
    return out
end

--- The text cut in the middle when longer than `max` bytes: its head and tail (whole
-- UTF-8 characters) around "…(N bytes)…", N the full length, so a 2,000-byte pointer
-- shows where it starts, where it ends and how long it is.
-- @tparam string s
-- @tparam[opt=300] integer max bytes kept (head and tail together; at least 16)
-- @treturn string
function _M.elide(s, max)
    if type(s) ~= "string" then return s end
    max = max or 300
    if max < 16 then max = 16 end
    local n = #s
    if n <= max then return s end
    local head = floor(max * 2 / 3)
    local tail = max - head
    local h = char_start(s, head + 1, 1) - 1
    local t = char_start(s, n - tail + 1, h + 1)
    return sub(s, 1, h) .. "\226\128\166(" .. thousands(n) .. " bytes)\226\128\166" .. sub(s, t)
end

--- Text fit for an outcome, a review line or a terminal: the secret redacted first (so a
-- cut never leaves half a key), then elided to `max` bytes, then made valid UTF-8.
-- @param s any value; non-strings go through `tostring`
-- @tparam string|table|nil secret as for `redact`
-- @tparam[opt=300] integer max
-- @treturn string
function _M.clean(s, secret, max)
    if type(s) ~= "string" then s = tostring(s) end
    return _M.utf8(_M.elide(_M.redact(s, secret), max))
end

-- Query parameters whose values are credentials.
local SECRET_PARAMS = { key = true, api_key = true, apikey = true, ["api-key"] = true, token = true,
    access_token = true, auth = true, password = true, secret = true, sig = true, signature = true,
    code = true, session = true, client_secret = true }

--- Is a URL query parameter of this name a credential (key, api_key, token, password,
-- signature, any name holding "key" or "token", ...)? Its name as written in the URL;
-- percent-encoded "-" and "_" are read as themselves.
-- @tparam string name
-- @treturn boolean
function _M.credential_param(name)
    local plain = lower((gsub(gsub(name, "%%2[dD]", "-"), "%%5[fF]", "_")))
    return SECRET_PARAMS[plain] or find(plain, "key", 1, true) ~= nil or find(plain, "token", 1, true) ~= nil
end

--- A URL fit to be shown: user and password removed, the values of credential-like query
-- parameters (key, api_key, token, password, signature, ...) replaced by "[redacted]",
-- the secret redacted, and the whole made valid UTF-8 and elided to 200 bytes.
-- @tparam string url
-- @tparam[opt] string|table secret
-- @treturn string
function _M.scrub_url(url, secret)
    if type(url) ~= "string" then return url end
    url = _M.redact(url, secret)
    -- scheme://user:pass@host -> scheme://[redacted]@host
    url = url:gsub("^(%a[%w+.-]*://)([^/?#]*)@", "%1" .. _M.REDACTED .. "@")
    url = url:gsub("([?&;])([^=&;#]*)=([^&;#]*)", function(sep, name, value)
        if _M.credential_param(name) then
            return sep .. name .. "=" .. _M.REDACTED
        end
        return sep .. name .. "=" .. value
    end)
    return _M.elide(_M.utf8(url), 200)
end

--- What an error value raised by user code says, in words a person can act on: an err
-- table or a table with `__tostring` as it prints itself, another table as its fields
-- (`{code = 42, message = "db down"}`, at most 8, values elided), anything else through
-- `tostring`. Never raises.
-- @param e the raised value
-- @treturn string
function _M.describe(e)
    if type(e) == "string" then return e end
    if type(e) ~= "table" then return tostring(e) end
    local mt = getmetatable(e)
    if type(mt) == "table" and mt.__tostring ~= nil then
        local ok, s = pcall(tostring, e)
        if ok and type(s) == "string" then return s end
        return "a table whose __tostring raised"
    end
    local keys = {}
    for k in pairs(e) do
        keys[#keys + 1] = k
        if #keys > 64 then break end
    end
    table.sort(keys, function(a, b)
        if type(a) == type(b) and (type(a) == "string" or type(a) == "number") then return a < b end
        return type(a) < type(b)
    end)
    local parts = {}
    for i = 1, #keys do
        if i > 8 then
            parts[#parts + 1] = "..."
            break
        end
        local k, x = keys[i], e[keys[i]]
        local ks = type(k) == "string" and k:match("^[%a_][%w_]*$") and k or ("[" .. tostring(k) .. "]")
        local xs
        if type(x) == "string" then xs = format("%q", _M.elide(x, 80)):gsub("\\\n", "\\n")
        elseif type(x) == "table" then xs = next(x) == nil and "{}" or "{...}"
        else xs = tostring(x) end
        parts[#parts + 1] = ks .. " = " .. xs
    end
    if #parts == 0 then return "an empty table" end
    return "{" .. concat(parts, ", ") .. "}"
end

return _M
