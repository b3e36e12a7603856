--- `jsoncontract probe`: send one request in JSON mode (`response_format: json_object`) and
-- record what the provider did. It never switches modes, here or anywhere: the finding is
-- recorded for a person to act on. A timeout proves nothing either way.
-- Exit 0 honoured, 1 rejected or ignored, 3 inconclusive, 2 usage error.
-- @module jsoncontract.cli.probe
local core = require "jsoncontract.core"
local evidence = require "jsoncontract.evidence"
local secrets = require "jsoncontract.secrets"
local openai = require "jsoncontract.providers.openai"
local util = require "jsoncontract.cli.util"

-- What the provider's answer says about JSON mode: the record's fields and the exit status.
local function judge(rec, res, terr)
    if not res then
        rec.capability, rec.kind = "inconclusive", terr.kind
        rec.reason = terr.kind == "timeout" and "a timeout proves nothing either way"
            or ("the request did not complete (" .. tostring(terr.kind) .. ")")
        return 3
    end
    rec.http_status = res.status
    local reply, rerr = openai.read_response(res.status, res.headers or {}, res.body or "")
    if reply then
        rec.finish_reason = reply.finish_reason
        local v = core.decode(reply.text)
        if type(v) == "table" and getmetatable(v) ~= core.array_mt then
            rec.capability, rec.reason = "honoured", "HTTP 200 and the content is one JSON object"
            return 0
        end
        rec.capability, rec.reason = "ignored", "HTTP 200 but the content is not one JSON object"
        return 1
    elseif res.status == 400 and (res.body or ""):find("response_format", 1, true) then
        rec.capability, rec.kind = "rejected", rerr.kind
        rec.reason = "HTTP 400 naming response_format: JSON mode is not supported"
        return 1
    end
    rec.capability, rec.kind = "inconclusive", rerr.kind
    rec.reason = "the provider answered " .. tostring(rerr) .. "; nothing is concluded"
    return 3
end

local function run_probe(args, env)
    local p, perr = util.choose_provider(args)
    if not p then return util.fail(env, perr) end
    if p.standin and args.base_url then
        p.standin, p.base_url = nil, args.base_url -- a local OpenAI-compatible server without a key
    end
    if p.provider ~= "openai" then
        return util.fail(env, "probe: " .. p.provider
            .. " has no JSON mode to probe (only openai-compatible providers do)")
    end
    -- The log opens before anything is sent: a path that cannot take it is a usage error.
    local log
    if args.out then
        local lerr
        log, lerr = evidence.open(args.out)
        if not log then return util.fail(env, "probe: cannot write --out: " .. tostring(lerr)) end
        if p.api_key then log:add_secret(p.api_key) end
    end
    local stop
    if p.standin then
        local standin, serr = util.start_standin(env)
        if not standin then
            if log then log:close() end
            return util.fail(env, serr)
        end
        p.base_url, stop = standin.base_url, standin.stop
    end
    local view = { name = "json_mode_probe", version = "1", schema = { type = "object" },
        prompt = "Answer with one JSON object and nothing else: {\"ok\": true}." }
    local ask_ok = { { role = "user", content = "Reply with the JSON object {\"ok\": true}." } }
    local req = openai.build_request(view, ask_ok,
        { model = p.model, api_key = p.api_key, base_url = p.base_url, mode = "json", max_tokens = 50 })
    local t0 = os.time()
    local res, terr = require("jsoncontract.transport.curl").request { url = req.url, method = req.method,
        headers = req.headers, body = req.body, timeout_ms = args.timeout_ms or 30000 }
    local rec = { ts = os.date("!%Y-%m-%dT%H:%M:%SZ"), probe = "json_mode", provider = p.provider, model = p.model,
        standin = p.standin or false, mode_requested = "json", response_format = { type = "json_object" },
        mode_switched = false, elapsed_s = os.time() - t0 }
    local status = judge(rec, res, terr)
    if stop then stop() end
    env.stdout:write(secrets.redact(core.encode(rec), p.api_key), "\n")
    if log then
        log:write(rec)
        log:close()
    end
    return status
end

return {
    name = "probe",
    summary = "Send one JSON-mode request and record what the provider did (never switches modes).",
    configure = function(parser)
        parser:option("--provider", "Provider (only openai-compatible ones have a JSON mode; default openai).")
            :convert(util.provider_name)
        parser:option("--model", "Model name.")
        parser:option("--base-url", "An OpenAI-compatible server (default: the provider's, or the stand-in "
            .. "when no key is set).")
        parser:option("--timeout-ms", "Whole request (default 30000)."):convert(util.whole("--timeout-ms"))
        parser:option("--out", "Also append the record to this evidence log.")
        parser:epilog("Exit status: 0 honoured, 1 rejected or ignored, 3 inconclusive, 2 usage error.")
    end,
    run = run_probe,
}
