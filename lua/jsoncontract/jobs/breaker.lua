--- The circuit breaker of a batch run. A failure that no item can fix (the model cannot be
-- reached, or refuses every request alike: `jsoncontract.run.policy.systemic`) says nothing
-- about the item, so the item is not settled: it goes back to waiting. A run of `limit` such
-- failures in a row (counted as outcomes come in; any other outcome starts the count again)
-- trips the breaker: the run stops, and `message` names the cause and the fix. A few such
-- failures between good answers (a blip) only send those items round again.
-- A rule that cannot run (it raises, or runs out of its step, time or memory budget) is a
-- fault of the contract, not of the item: a person cannot decide an item its rules cannot
-- check, so that item is not settled either (the runner does not take it again: the same rule
-- fails on it again), and `limit` such items in the run, in a row or not, trip the breaker.
-- @module jsoncontract.jobs.breaker
local core = require "jsoncontract.core"
local policy = require "jsoncontract.run.policy"
local secrets = require "jsoncontract.secrets"
local errors = require "jsoncontract.errors"

local type, tostring, setmetatable, pcall, error = type, tostring, setmetatable, pcall, error
local format = string.format

local _M = { _VERSION = core._VERSION }
local mt = { __index = _M }

--- Failures no item can fix, in a row, that stop a run when none is given (`--fail-after`):
-- enough that a blip of a few refused connections does not stop a job, few enough that a
-- wrong key or a closed port costs seconds, not the whole input.
_M.DEFAULT_LIMIT = 5

--- A breaker for one run.
-- @tparam table opts `limit` (integer >= 1, default `DEFAULT_LIMIT`), `provider` (name, for the
--   key variable and the API host: `jsoncontract.providers.facts`), `base_url` (string|nil: the
--   URL asked, nil for the provider's own), `model` (string), `secret` (string|nil: the API key,
--   kept out of every message)
-- @treturn table breaker
-- @raise on a limit that is not a whole number >= 1
function _M.new(opts)
    opts = opts or {}
    local limit = opts.limit or _M.DEFAULT_LIMIT
    if type(limit) ~= "number" or limit < 1 or limit % 1 ~= 0 then
        error("breaker.new: limit must be a whole number >= 1", 2)
    end
    local facts = {}
    if type(opts.provider) == "string" then
        local ok, f = pcall(require("jsoncontract.providers").facts, opts.provider)
        if ok then facts = f end
    end
    return setmetatable({ limit = limit, provider = opts.provider, model = opts.model, secret = opts.secret,
        url = secrets.scrub_url(opts.base_url or facts.base_url or "the provider's URL"), key_env = facts.key_env,
        count = 0, rule_faults = 0, held_back = 0 }, mt)
end

-- Rule outcomes that say the rule could not run (jsoncontract.contract.rules): not a verdict.
local RULE_FAULT = { rule_error = true, rule_timeout = true, rule_memory = true }

--- Take one outcome in.
-- @tparam table outcome a `jsoncontract.run.ask` outcome (`status`, `reason`)
-- @treturn string|nil the cause when the outcome is a failure no item can fix (the item is not
--   settled: give it back), nil when the outcome settles its item
function _M.observe(self, outcome)
    local reason = outcome and outcome.status ~= "accepted" and outcome.reason or nil
    if type(reason) == "table" and reason.category == "rules" and RULE_FAULT[reason.kind] then
        self.rule_faults = self.rule_faults + 1
        self.held_back = self.held_back + 1
        self.rule_reason = reason
        if not self.tripped_at then
            self.cause, self.reason = "rule", reason
            if self.rule_faults >= self.limit then self.tripped_at = self.rule_faults end
        end
        return "rule"
    end
    local cause = reason and policy.systemic(reason) or nil
    if not cause then
        self.count = 0
        return nil
    end
    self.count = self.count + 1
    self.held_back = self.held_back + 1
    if not self.tripped_at then
        self.cause, self.reason = cause, reason
        if self.count >= self.limit then self.tripped_at = self.count end
    end
    return cause
end

--- Has a run of `limit` such failures stopped the run?
-- @treturn boolean
function _M.tripped(self)
    return self.tripped_at ~= nil
end

--- What the rules' faults were, in one sentence (no key in it), or nil when there were none.
-- @treturn string|nil e.g. "the contract's rules could not run on 2 items (rule_error: rule
--   known raised: ...): fix the rule, as no person can decide an item its rules cannot check"
function _M.rule_message(self)
    if self.rule_faults == 0 then return nil end
    local r = self.rule_reason
    return secrets.clean(format("the contract's rules could not run on %d items (%s: %s): fix the rule, as "
        .. "no person can decide an item its rules cannot check", self.rule_faults, tostring(r.kind),
        errors.snippet(r.message or "")), self.secret, 2000)
end

-- What each cause says happened and what to check.
local WORDS = {
    refused = { "the model at %s refused the connection", "check --base-url (is the server running, on that port?)" },
    dns = { "the host of %s could not be resolved", "check --base-url and this host's DNS" },
    unreachable = { "the model at %s did not accept the connection", "check --base-url (is the server running, on "
        .. "that port?) and the network" },
    tls = { "the TLS handshake with %s failed", "check --base-url (https:// for a server with TLS, http:// "
        .. "for one without) and the server's certificate" },
    unauthorized = { "the model at %s answered 401 Unauthorized", "the API key is wrong or missing: check %s" },
    forbidden = { "the model at %s answered 403 Forbidden", "the key in %s may not use this model or endpoint: "
        .. "check the key's permissions and --model" },
    not_found = { "the model at %s answered 404 Not Found", "there is no model %s there, or no such path: "
        .. "check --model and --base-url" },
    quota = { "the model at %s says the account's quota is spent", "check the account's plan and billing" },
}

--- What stopped the run and what to do, in one sentence (no key in it), e.g. "the model at
-- http://127.0.0.1:9 refused the connection 5 times in a row: check --base-url (...)".
-- @treturn string|nil nil when the breaker has not tripped
function _M.message(self)
    if not self.tripped_at then return nil end
    local last = self.reason and self.reason.message
    if self.cause == "rule" then return self:rule_message() end
    local w = WORDS[self.cause]
    local fix = w[2]
    if self.cause == "unauthorized" or self.cause == "forbidden" then
        fix = format(fix, self.key_env or "the key given")
    elseif self.cause == "not_found" then
        fix = format(fix, tostring(self.model))
    end
    return secrets.clean(format("%s %d times in a row: %s%s", format(w[1], self.url), self.tripped_at, fix,
        last and (" (last: " .. errors.snippet(last) .. ")") or ""), self.secret, 2000)
end

return _M
