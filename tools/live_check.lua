#!/usr/bin/env lua5.4
-- Real calls: ask each provider once with the support-ticket contract, for the providers whose
-- key (or host) is set; the others are skipped. Prints one line per provider: status, mode,
-- reason, tokens. Never prints a key: every line is masked before it is written.
--
--   lua5.4 tools/live_check.lua            (from the repository root, after `make`)
--
-- Environment:
--   OPENAI_API_KEY     openai (Chat Completions) and openai_responses; model JC_OPENAI_MODEL
--                      (default gpt-4o-mini), base OPENAI_BASE_URL
--   ANTHROPIC_API_KEY  anthropic; JC_ANTHROPIC_MODEL (claude-haiku-4-5), ANTHROPIC_BASE_URL
--   GEMINI_API_KEY     gemini (or GOOGLE_API_KEY); JC_GEMINI_MODEL (gemini-2.5-flash), GEMINI_BASE_URL
--   OLLAMA_HOST        ollama at that host (e.g. http://127.0.0.1:11434); JC_OLLAMA_MODEL (llama3.2)
--   LLAMACPP_URL       llama.cpp server base URL; JC_LLAMACPP_MODEL (default "default"),
--                      LLAMACPP_API_KEY if the server wants one
-- Exit status: 0 when every call that ran ended in a decision (accepted or human_review),
-- 1 when one raised.
local script = arg and arg[0] or "tools/live_check.lua"
local root = script:match("^(.*)/tools/[^/]*$") or "."
local build = (jit and "luajit") or ("lua" .. _VERSION:match("%d+%.%d+"))
package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("JC_CPATH") or (root .. "/build/" .. build .. "/?.so")) .. ";" .. package.cpath

local jc = require "jsoncontract"
local evidence = require "jsoncontract.evidence"

local ticket = dofile(root .. "/examples/support_ticket.lua")
local MAIL = "Hello, the courier did not come today for order 1042. This is urgent, I leave tomorrow! Please help."

local function env(name) local v = os.getenv(name) return v ~= "" and v or nil end

local CHECKS = {
    { provider = "openai", key = env("OPENAI_API_KEY"), model = env("JC_OPENAI_MODEL") or "gpt-4o-mini",
      base_url = env("OPENAI_BASE_URL"), needs = "OPENAI_API_KEY" },
    { provider = "openai_responses", key = env("OPENAI_API_KEY"), model = env("JC_OPENAI_MODEL") or "gpt-4o-mini",
      base_url = env("OPENAI_BASE_URL"), needs = "OPENAI_API_KEY" },
    { provider = "anthropic", key = env("ANTHROPIC_API_KEY"), model = env("JC_ANTHROPIC_MODEL") or "claude-haiku-4-5",
      base_url = env("ANTHROPIC_BASE_URL"), needs = "ANTHROPIC_API_KEY" },
    { provider = "gemini", key = env("GEMINI_API_KEY") or env("GOOGLE_API_KEY"),
      model = env("JC_GEMINI_MODEL") or "gemini-2.5-flash", base_url = env("GEMINI_BASE_URL"),
      needs = "GEMINI_API_KEY" },
    { provider = "ollama", host = env("OLLAMA_HOST"), model = env("JC_OLLAMA_MODEL") or "llama3.2",
      needs = "OLLAMA_HOST" },
    { provider = "llamacpp", host = env("LLAMACPP_URL"), key = env("LLAMACPP_API_KEY"),
      model = env("JC_LLAMACPP_MODEL") or "default", needs = "LLAMACPP_URL" },
}

local secrets = {}
for _, c in ipairs(CHECKS) do if c.key then secrets[#secrets + 1] = c.key end end

local function say(line)
    for _, s in ipairs(secrets) do
        local i = 1
        while true do
            local a, b = line:find(s, i, true)
            if not a then break end
            line = line:sub(1, a - 1) .. "[redacted]" .. line:sub(b + 1)
            i = a + 10
        end
    end
    io.stdout:write(line, "\n")
end

local failed = false
for _, c in ipairs(CHECKS) do
    if not (c.key or c.host) or (c.needs == "LLAMACPP_URL" and not c.host) then
        say(string.format("%-17s skipped (%s not set)", c.provider, c.needs))
    else
        local base = c.base_url
        if c.host then
            base = c.host:match("^https?://") and c.host or ("http://" .. c.host)
        end
        local ev = evidence.memory()
        local ok, outcome = pcall(jc.ask, ticket.contract, MAIL, {
            provider = c.provider, model = c.model, api_key = c.key, base_url = base, evidence = ev,
            max_tokens = 400, timeout_ms = 60000, policy = { max_attempts = 2, transport_retries = 1 },
        })
        if not ok then
            failed = true
            say(string.format("%-17s raised: %s", c.provider, tostring(outcome)))
        else
            local rec = ev.lines[#ev.lines] and jc.decode(ev.lines[#ev.lines]) or {}
            local reason = outcome.reason and tostring(outcome.reason) or ""
            say(string.format("%-17s %s mode=%s attempts=%d tokens=%d+%d %s%s", c.provider, outcome.status,
                tostring(rec.mode), #outcome.attempts, outcome.usage.input_tokens, outcome.usage.output_tokens,
                outcome.value and jc.encode(outcome.value) or "", reason))
        end
    end
end
os.exit(failed and 1 or 0)
