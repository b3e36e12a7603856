--- What the stand-in model knows about the leave_request example (SEEDS §3): how it recognises a
-- request for it, what a careful reader fills in, and the mistakes it makes. Loaded by the
-- stand-in (`jsoncontract.standin.conversation.load_examples`); not part of the contract.
local conversation = require "jsoncontract.standin.conversation"
local hash = require "jsoncontract.standin.hash"
local stext = require "jsoncontract.standin.text"

local floor = math.floor
local sub, find, gsub, lower, format = string.sub, string.find, string.gsub, string.lower, string.format
local sort = table.sort
local ipairs, tonumber = ipairs, tonumber
local jstr, jobj, has_word, count_in = stext.jstr, stext.jobj, stext.has_word, stext.count_in

local NAME = "leave_request"
local _M = { name = NAME, order = 3 }

-- Faults with their share on attempt 1 (the rest is clean JSON); see `FAULTS`.
local FAULTS = {
    { "fenced", 0.06 }, { "enum_language", 0.06 }, { "bad_date", 0.05 }, { "extra_field", 0.04 },
    { "number_for_string", 0.03 }, { "refusal", 0.02 }, { "truncated", 0.02 }, { "prose", 0.02 },
}

--- The fault names, in draw order: fenced, refusal, truncated, prose as for the support ticket;
-- `enum_language` the enum value in other words; `extra_field`; `number_for_string`; and this
-- contract's own (see the list above).
_M.FAULTS = {}
for i, f in ipairs(FAULTS) do _M.FAULTS[i] = f[1] end


local MONTHS = {
    january = 1, jan = 1, januar = 1, ["jänner"] = 1, janvier = 1, enero = 1,
    february = 2, feb = 2, februar = 2, ["février"] = 2, febrero = 2,
    march = 3, mar = 3, ["märz"] = 3, maerz = 3, mars = 3, marzo = 3,
    april = 4, apr = 4, avril = 4, abril = 4,
    may = 5, mai = 5, mayo = 5,
    june = 6, jun = 6, juni = 6, juin = 6, junio = 6,
    july = 7, jul = 7, juli = 7, juillet = 7, julio = 7,
    august = 8, aug = 8, ["août"] = 8, agosto = 8,
    september = 9, sep = 9, sept = 9, septembre = 9, septiembre = 9,
    october = 10, oct = 10, oktober = 10, okt = 10, octobre = 10, octubre = 10,
    november = 11, nov = 11, novembre = 11, noviembre = 11,
    december = 12, dec = 12, dezember = 12, dez = 12, ["décembre"] = 12, diciembre = 12,
}
local LEAVE_WORDS = { "urlaub", "frei", "leave", "vacation", "holiday", "day off", "days off", "time off",
    "abwesen", "freistellung", "urlaubstag", "brückentag", "sonderurlaub", "elternzeit", "congé", "vacaciones",
    "off work", "pto", "absence", "absent", "urlaubsantrag", "ferien", "auszeit" }
local VAGUE_DATE_WORDS = { "montag", "dienstag", "mittwoch", "donnerstag", "freitag", "samstag", "sonntag",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "morgen", "übermorgen",
    "tomorrow", "nächste woche", "next week", "nächsten monat", "next month", "sommer", "summer", "weihnacht",
    "christmas", "ostern", "easter", "bald", "soon", "brückentag" }

local function real_date(y, m, d)
    if not (y and m and d) or m < 1 or m > 12 or d < 1 or y < 1900 or y > 2199 then return nil end
    local dim = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }
    if m == 2 and (y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0)) then dim[2] = 29 end
    if d > dim[m] then return nil end
    return format("%04d-%02d-%02d", y, m, d)
end

-- The date forms with a month word, in the order they are read: `date` captures the start,
-- day and word (word and day when `month_first`) and the end; `year` a year after it.
local WORD_DATES = {
    { date = "()%f[%d](%d%d?)%a?%a?%.?%s+of%s+([%a\128-\255]+)()", year = "^%.?,?%s*(%d%d%d%d)%f[%D]()" },
    { date = "()%f[%d](%d%d?)%a?%a?%.?%s*([%a\128-\255]+)()", year = "^%.?,?%s*(%d%d%d%d)%f[%D]()" },
    { date = "()%f[%a]([%a\128-\255]+)%.?%s+(%d%d?)%f[%D]%a?%a?()", year = "^,?%s*(%d%d%d%d)%f[%D]()",
      month_first = true },
}

-- Date mentions in reading order: {at=, y=, m=, d=} (y or m may be missing).
local function date_mentions(text)
    local low = lower(text)
    local out = {}
    local taken = {}
    local function add(at, y, m, d, stop)
        for i = at, stop do
            if taken[i] then return end
        end
        for i = at, stop do taken[i] = true end
        out[#out + 1] = { at = at, y = y, m = m, d = d }
    end
    for s, y, m, d, e in low:gmatch("()%f[%d](%d%d%d%d)%-(%d%d?)%-(%d%d?)%f[%D]()") do
        add(s, tonumber(y), tonumber(m), tonumber(d), e - 1)
    end
    for s, d, m, y, e in low:gmatch("()%f[%d](%d%d?)%.(%d%d?)%.(%d%d%d%d)%f[%D]()") do
        add(s, tonumber(y), tonumber(m), tonumber(d), e - 1)
    end
    for s, d, m, e in low:gmatch("()%f[%d](%d%d?)%.(%d%d?)%.()%f[%D]") do -- 12.6. (no year)
        add(s, nil, tonumber(m), tonumber(d), e - 1)
    end
    -- dates with a month word, each with the year that may follow: 12th of June, 12 June 2027,
    -- 12. Juni 2027, June 12, 2027
    for _, form in ipairs(WORD_DATES) do
        for s, a, b, e in low:gmatch(form.date) do
            local d, word = a, b
            if form.month_first then d, word = b, a end
            if MONTHS[word] then
                local y, e2 = low:match(form.year, e)
                add(s, tonumber(y), MONTHS[word], tonumber(d), (e2 or e) - 1)
            end
        end
    end
    -- a bare day before a range word: "vom 12. bis 14. Juni", "12-14 June", "from 12 to 14 June"
    for s, d, e in low:gmatch("()%f[%d](%d%d?)%.?%s*%f[^%s]()") do
        local rest = sub(low, e, e + 12)
        if (find(rest, "^bis") or find(rest, "^to%f[%A]") or find(rest, "^until") or find(rest, "^till")
            or find(rest, "^%-") or find(rest, "^\226\128\147") or find(rest, "^au%f[%A]") or find(rest, "^al%f[%A]"))
            and not taken[s] then
            add(s, nil, nil, tonumber(d), s + #d - 1)
        end
    end
    for s, d, e in low:gmatch("()%f[%d](%d%d?)%-()%f[%d]") do -- "12-14 june"
        if not taken[s] then add(s, nil, nil, tonumber(d), e - 2) end
    end
    sort(out, function(a, b) return a.at < b.at end)
    -- a day or day-month before a fuller mention takes its month and year
    for i = #out - 1, 1, -1 do
        local a, b = out[i], out[i + 1]
        if not a.m and b.m then a.m = b.m end
        if not a.y and b.y and a.m and (a.m <= b.m) then a.y = b.y end
    end
    return out
end

--- What a careful reader extracts from a leave request; dates only as the text states them.
-- @tparam string text the message
-- @treturn table {status=string, start_date=string|nil, end_date=string|nil, question=string|nil, lang=string}
function _M.extract_leave(text)
    local low = lower(text)
    local de = stext.lang_of(text) == "de" or count_in(low, { "urlaub", "frei", "bitte", "ich", "vom", "bis" }) > 0
    local function q(de_text, en_text) return de and de_text or en_text end
    local mentions = date_mentions(text)
    local full, partial, bad = {}, 0, 0
    for _, m in ipairs(mentions) do
        if m.y and m.m and m.d then
            local iso = real_date(m.y, m.m, m.d)
            if iso then full[#full + 1] = iso else bad = bad + 1 end
        else
            partial = partial + 1
        end
    end
    local leave = count_in(low, LEAVE_WORDS) > 0
    local vague = count_in(low, VAGUE_DATE_WORDS) > 0
    local weekday
    for i = 1, 14 do
        if has_word(low, VAGUE_DATE_WORDS[i]) then weekday = VAGUE_DATE_WORDS[i] break end
    end
    local v = { lang = de and "de" or "en" }
    if not leave and #full == 0 then
        v.status = "not_a_request"
        return v
    end
    v.status = "needs_clarification"
    if bad > 0 then
        v.question = q("Eines der Daten gibt es im Kalender nicht. Welche Daten meinen Sie genau?",
            "One of the dates does not exist in the calendar. Which dates do you mean exactly?")
    elseif #full >= 2 then
        if full[2] < full[1] then
            v.question = q("Das Enddatum " .. full[2] .. " liegt vor dem Startdatum " .. full[1] ..
                ". Von wann bis wann möchten Sie Urlaub?", "The end date " .. full[2] .. " is before the start date "
                .. full[1] .. ". From when until when do you want leave?")
        else
            v.status, v.start_date, v.end_date = "complete", full[1], full[2]
        end
    elseif #full == 1 then
        v.start_date = full[1]
        v.question = q("Bis zu welchem Tag möchten Sie Urlaub?", "Until which day do you want leave?")
    elseif vague and weekday then
        local name = gsub(weekday, "^%l", string.upper)
        v.question = q("Welchen " .. name .. " meinen Sie (mit Datum)?",
            "Which " .. name .. " do you mean, with its date?")
    elseif vague or partial > 0 then
        v.question = q("Welches genaue Datum meinen Sie (TT.MM.JJJJ)?",
            "Which exact date do you mean (with day, month and year)?")
    else
        v.question = q("Für welchen Zeitraum möchten Sie Urlaub?", "For which dates do you want leave?")
    end
    return v
end

local function date_or_null(s) return s and jstr(s) or "null" end

local function leave_json(v, fault, r)
    local status = jstr(v.status)
    local sd, ed = date_or_null(v.start_date), date_or_null(v.end_date)
    local question = v.question and jstr(v.question) or "null"
    if fault == "enum_language" then
        local words = {
            complete = { "vollständig", "Complete", "genehmigt" },
            needs_clarification = { "Rückfrage", "unklar", "needs clarification" },
            not_a_request = { "kein Antrag", "none", "not a request" },
        }
        status = jstr(words[v.status][floor(r * 3) + 1])
    elseif fault == "bad_date" then
        if not v.start_date then
            sd = jstr(r < 0.5 and "" or "unbekannt")
        elseif not v.end_date then
            ed = jstr(r < 0.5 and "" or "unknown")
        else
            local y, m, d = v.start_date:match("^(%d+)%-(%d+)%-(%d+)$")
            local unpadded = r < 0.5 and (tonumber(m) < 10 or tonumber(d) < 10)
            sd = jstr(unpadded and format("%d-%d-%d", y, m, d) or format("%s.%s.%s", d, m, y))
        end
    elseif fault == "number_for_string" then
        if v.start_date then
            sd = gsub(v.start_date, "%-", "")
        else
            question = "0"
        end
    end
    local fields = { { "status", status }, { "start_date", sd }, { "end_date", ed },
        { "clarification_question", question } }
    if fault == "extra_field" then
        fields[#fields + 1] = r < 0.5 and { "grund", jstr("Urlaub") } or { "days", "3" }
    end
    return jobj(fields, r < 0.3 and " " or nil)
end

local function leave_prose(v)
    if v.status == "complete" then
        return (v.lang == "de" and "Gern! Urlaub vom " .. v.start_date .. " bis " .. v.end_date .. "."
            or "Sure! Leave from " .. v.start_date .. " to " .. v.end_date .. ".")
    elseif v.status == "not_a_request" then
        return v.lang == "de" and "Das ist kein Urlaubsantrag." or "This is not a leave request."
    end
    return (v.lang == "de" and "Gern! " or "Sure! ") .. v.question
end

--- A request for this contract: its schema's property names, or (prompt mode) a system prompt
-- naming them all.
_M.recognise = conversation.by_keys { "status", "start_date", "end_date", "clarification_question" }

--- The answer for this contract (the input text is `ans.mail`).
-- @tparam table ans `attempt`, `mail`
-- @tparam integer seed
-- @tparam table request (`max_tokens`)
-- @treturn table ans
function _M.answer(ans, seed, request)
    local mail, attempt = ans.mail, ans.attempt
    local v = _M.extract_leave(mail)
    local r = hash.draw(seed, NAME, mail, attempt, "style")
    if find(mail, "[[truncate]]", 1, true) then
        ans.kind, ans.fault, ans.text = "truncated", "truncated", conversation.cut(leave_json(v, nil, r), 0.5)
        return ans
    end
    local fault = conversation.fault_for(seed, { NAME, mail }, FAULTS, attempt)
    return conversation.write(ans, fault, r, v, { json = leave_json, prose = leave_prose }, request.max_tokens)
end

return _M
