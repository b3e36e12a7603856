--- What the stand-in model knows about the ticket_priority example (SEEDS §2): how it recognises a
-- request for it, what a careful reader fills in, and the mistakes it makes. Loaded by the
-- stand-in (`jsoncontract.standin.conversation.load_examples`); not part of the contract.
local conversation = require "jsoncontract.standin.conversation"
local hash = require "jsoncontract.standin.hash"
local stext = require "jsoncontract.standin.text"

local floor = math.floor
local find, lower = string.find, string.lower
local ipairs = ipairs
local jstr, jobj, count_in, first_sentence = stext.jstr, stext.jobj, stext.count_in, stext.first_sentence

local NAME = "ticket_priority"
local _M = { name = NAME, order = 2 }

-- Faults with their share on attempt 1 (the rest is clean JSON); see `FAULTS`.
local FAULTS = {
    { "fenced", 0.06 }, { "enum_language", 0.06 }, { "missing_field", 0.05 }, { "extra_field", 0.04 },
    { "number_for_string", 0.03 }, { "refusal", 0.02 }, { "truncated", 0.02 }, { "prose", 0.02 },
}

--- The fault names, in draw order: fenced, refusal, truncated, prose as for the support ticket;
-- `enum_language` the enum value in other words; `extra_field`; `number_for_string`; and this
-- contract's own (see the list above).
_M.FAULTS = {}
for i, f in ipairs(FAULTS) do _M.FAULTS[i] = f[1] end


local TOPIC_WORDS = {
    { "Arve", { "arve", "summa", "makse", "maks", "raha", "hind", "tasu", "raamatupid", "invoice", "payment" } },
    { "Tarne", { "pakk", "tarne", "saadetis", "kohale", "kuller", "kättetoime", "tellimus", "delivery", "parcel" } },
    { "Konto", { "konto", "parool", "sisse logi", "sisselogi", "kasutaja", "password", "account", "login" } },
    { "Tehniline", { "viga", "ei tööta", "rakendus", "tõrge", "server", "lehekülg", "veateade", "error", "crash" } },
}
local HIGH_WORDS = { "kiiresti", "kohe", "kiire", "viivitamatult", "kiireloomuli", "urgent", "asap", "immediately",
    "hädaolukord", "täna" }

--- What a careful reader fills in for an Estonian helpdesk ticket.
-- @tparam string text the ticket
-- @treturn table {teema=string (Arve|Tarne|Konto|Tehniline|Muu), prioriteet="madal"|"kõrge", kokkuvote=string}
function _M.extract_priority(text)
    local low = lower(text)
    local topic, best, at = "Muu", 0, nil
    for _, tw in ipairs(TOPIC_WORDS) do
        local n, first = count_in(low, tw[2])
        if n > best or (n == best and n > 0 and first < at) then topic, best, at = tw[1], n, first end
    end
    local high = count_in(low, HIGH_WORDS) > 0 or find(text, "!!", 1, true) ~= nil
    return { teema = topic, prioriteet = high and "kõrge" or "madal",
        kokkuvote = first_sentence(text) or "Klient vajab abi." }
end

local function priority_json(v, fault, r)
    local prio = jstr(v.prioriteet)
    if fault == "enum_language" then
        local words = v.prioriteet == "kõrge" and { "high", "kohe", "Kõrge" } or { "low", "tavaline", "Madal" }
        prio = jstr(words[floor(r * 3) + 1])
    elseif fault == "number_for_string" then
        prio = v.prioriteet == "kõrge" and "1" or "3"
    end
    local fields = { { "teema", jstr(v.teema) }, { "prioriteet", prio } }
    if fault ~= "missing_field" then fields[3] = { "kokkuvõte", jstr(v.kokkuvote) } end
    if fault == "extra_field" then
        fields[#fields + 1] = r < 0.5 and { "keel", jstr("et") } or { "kindlus", "0.8" }
    end
    return jobj(fields, r < 0.3 and " " or nil)
end

local function priority_prose(v)
    return "See pilet kuulub teemasse " .. v.teema .. ", prioriteet on " .. v.prioriteet .. ". " .. v.kokkuvote
end

--- A request for this contract: its schema's property names, or (prompt mode) a system prompt
-- naming them all.
_M.recognise = conversation.by_keys { "teema", "prioriteet", "kokkuvõte" }

--- The answer for this contract (the input text is `ans.mail`).
-- @tparam table ans `attempt`, `mail`
-- @tparam integer seed
-- @tparam table request (`max_tokens`)
-- @treturn table ans
function _M.answer(ans, seed, request)
    local mail, attempt = ans.mail, ans.attempt
    local v = _M.extract_priority(mail)
    local r = hash.draw(seed, NAME, mail, attempt, "style")
    if find(mail, "[[truncate]]", 1, true) then
        ans.kind, ans.fault, ans.text = "truncated", "truncated", conversation.cut(priority_json(v, nil, r), 0.5)
        return ans
    end
    local fault = conversation.fault_for(seed, { NAME, mail }, FAULTS, attempt)
    return conversation.write(ans, fault, r, v, { json = priority_json, prose = priority_prose }, request.max_tokens)
end

return _M
