--- The leave-request contract (after a German guide): pull a leave request out of a
-- message, or say honestly that it needs a question or is not a request at all.
-- A job module (`jsoncontract run --job examples/leave_request.lua --input examples/leave_request.jsonl`);
-- it returns `{ contract = ..., item = ..., context = false, schema = ..., result = function, policy = ... }`.
--
-- Three separate checks, as the guide asks: is it JSON (format gate), does it match the schema
-- (schema gate: ISO dates that are real calendar dates and round-trip exactly, 2027-06-12 and
-- never 2027-6-12), are the values meaningful (the rules below, across fields).
-- Unknown dates are null, never "" or "unknown" or invented; nothing is ever filled in by
-- default (no end_date copied from start_date, no bad date turned into null).
--
-- `result(outcome)` turns the outcome of `jc.ask` into the typed result the caller acts on:
--   { kind = "valid", value = {...} }                   complete, or not_a_request
--   { kind = "needs_clarification", question = "..." }  ask the person this question
--   { kind = "invalid", reason = err }                  a human reviews it (reason for the log)
--
-- Run it: `bin/jsoncontract examples leave_request`; one reply:
--   bin/jsoncontract check --job examples/leave_request.lua reply.json
-- Specs: spec/example_leave_request_spec.lua.
local jc = require "jsoncontract"

local M = {}

local DATE = { type = { "string", "null" }, format = "date", pattern = "^\\d{4}-\\d{2}-\\d{2}$",
    description = "ISO date YYYY-MM-DD; null when the message does not say" }

M.schema = {
    type = "object",
    properties = {
        status = { type = "string", enum = { "complete", "needs_clarification", "not_a_request" },
            description = "complete: both dates are clear; needs_clarification: ask a question; " ..
                "not_a_request: the message is about something else" },
        start_date = DATE,
        end_date = DATE,
        clarification_question = { type = { "string", "null" },
            description = "the one question to ask when status is needs_clarification, else null" },
    },
    required = { "status", "start_date", "end_date", "clarification_question" },
    additionalProperties = false,
}

local null = jc.null

local function blank(s) return s == null or not s:find("%S") end

--- Rule: what each status needs (the semantic gate). A failure is not the model's to repair
-- by guessing: it goes to a person (`retry = false`), never picked between retries.
local function status_fits(v)
    local errs = {}
    local function add(pointer, message) errs[#errs + 1] = { pointer = pointer, message = message } end
    if v.status == "complete" then
        if v.start_date == null then add("/start_date", "a complete request needs a start date") end
        if v.end_date == null then add("/end_date", "a complete request needs an end date") end
        if v.start_date ~= null and v.end_date ~= null and v.end_date < v.start_date then
            -- ISO dates of the same shape compare as strings
            add("/end_date", "end date " .. v.end_date .. " is before start date " .. v.start_date)
        end
        if v.clarification_question ~= null then
            add("/clarification_question", "a complete request has no clarification question")
        end
    elseif v.status == "needs_clarification" then
        if blank(v.clarification_question) then
            add("/clarification_question", "needs_clarification needs a non-empty question")
        end
    elseif v.status == "not_a_request" then
        if v.start_date ~= null then add("/start_date", "not_a_request has no start date") end
        if v.end_date ~= null then add("/end_date", "not_a_request has no end date") end
    end
    if #errs > 0 then return errs end
end

M.contract = jc.contract {
    name = "leave_request",
    version = "1.0.0",
    schema = M.schema,
    instructions = "You read one message to the HR office and extract a leave request from it. " ..
        "Use only dates the message states; when a date is unclear or missing, ask one question instead.",
    examples = {
        { input = "Ich möchte vom 12. bis 14. Juni 2027 Urlaub nehmen.",
          output = { status = "complete", start_date = "2027-06-12", end_date = "2027-06-14",
                     clarification_question = null } },
    },
    rules = { { name = "status_fits", check = status_fits, retry = false } },
}

--- The item the model reads from one input line `{id, text, ...}`: its text, under its id.
-- @tparam table record a decoded line
-- @treturn[1] table `{id, text}`
-- @return[2] nil
-- @treturn[2] string why
function M.item(record)
    if type(record) ~= "table" or type(record.text) ~= "string" then return nil, "has no string field 'text'" end
    return { id = record.id, text = record.text }
end

--- The rules read the value alone: no context.
M.context = false

--- Format and schema errors get one clearer retry; semantic errors go to a person.
M.policy = { max_attempts = 2 }

--- The typed result of an outcome (see the top of this file). Marks
-- `outcome.needs_clarification = true` for the metrics (`evidence.metrics`).
-- @tparam table outcome from `jc.ask(M.contract, ...)`
-- @treturn table `{kind = "valid"|"needs_clarification"|"invalid", value =, question =, reason =}`
function M.result(outcome)
    if outcome.status ~= "accepted" then
        return { kind = "invalid", reason = outcome.reason }
    end
    local v = outcome.value
    if v.status == "needs_clarification" then
        outcome.needs_clarification = true
        return { kind = "needs_clarification", question = v.clarification_question }
    end
    return { kind = "valid", value = v }
end

return M
