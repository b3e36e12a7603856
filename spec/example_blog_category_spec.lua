-- examples/blog_category.lua: the example's cases: the real fenced reply (strict: rejected;
-- with unwrap-one-json-fence: accepted and recorded), tag rules, duplicate keys, a second
-- object, 12 is not "12", finish_reason length, needs-review as the honest answer.
local jc = require "jsoncontract"
local core = require "jsoncontract.core"
local evidence = require "jsoncontract.evidence"
local fake = require "support.fake_model"
local util = require "support.util"

local ex = dofile("examples/blog_category.lua")

-- The real reply of the example (HTTP 200, usage 431 in, 79 out).
local FENCED = '\n\n```json\n{"category":"ai-apps","tags":["LLM應用","API集成","多輪對話"]}\n```'

local errs = util.errs

local ANSWERS = {
    fenced = { { FENCED, "stop", usage = { 431, 79 } } },
    recipe = { '{"category":"llm","tags":["炒飯"]}' },
    unrelated = { '{"category":"needs-review","tags":["食譜"]}' },
    cut = { { '{"category":"llm","tags":["LLM"]}', "length" } },
}
local function key(post)
    for _, k in ipairs { "fenced", "recipe", "unrelated", "cut" } do
        if post:find(k, 1, true) then return k end
    end
end

local function ask(post, opts)
    local send, calls = fake.transport { answers = ANSWERS, key = key }
    opts = util.fake_opts(send, opts)
    opts.evidence = opts.evidence or evidence.memory { record_text = true }
    opts.policy = { max_attempts = 1 } -- that program makes no automatic retry
    local out = jc.ask(ex.contract, post, opts)
    return out, ex.result(out), opts.evidence, calls
end

describe("examples/blog_category.lua", function()
    describe("the real fenced reply", function()
        it("is rejected by strict parsing at its first byte", function()
            local v, err = ex.contract:check(FENCED)
            assert.is_nil(v)
            assert.same({ "format", "unexpected_character", 2 }, { err.category, err.kind, err.offset })
        end)
        it("is accepted with unwrap-one-json-fence, which is recorded", function()
            local v, report = ex.contract:check(FENCED, { adapters = ex.adapters })
            assert.same({ category = "ai-apps", tags = { "LLM應用", "API集成", "多輪對話" } }, v)
            assert.same({ "unwrap-one-json-fence" }, report.adapters)
        end)
        it("through jc.ask: strict goes to review, the adapter accepts and is in the outcome and evidence", function()
            local out, r, log = ask("fenced post")
            assert.equal("invalid", r.kind)
            assert.equal("format", out.reason.category)
            assert.equal("format", core.decode(log.lines[1]).gate)
            out, r, log = ask("fenced post", { adapters = ex.adapters })
            assert.equal("valid", r.kind)
            assert.same({ "unwrap-one-json-fence" }, out.adapters)
            assert.same({ input_tokens = 431, output_tokens = 79 }, out.usage)
            local rec = core.decode(log.lines[1])
            assert.equal("accepted", rec.gate)
            assert.same({ "unwrap-one-json-fence" }, rec.adapters)
            assert.equal(FENCED, rec.text)
        end)
        for _, c in ipairs {
            { "text before the fence", "Here it is:\n" .. FENCED },
            { "text after the fence", FENCED .. "\nHope this helps" },
            { "two fenced blocks", FENCED .. "\n```json\n{}\n```" },
        } do
            it("rejects " .. c[1] .. " even with the adapter", function()
                local v, err = ex.contract:check(c[2], { adapters = ex.adapters })
                assert.is_nil(v)
                assert.same({ "format", "adapter_rejected" }, { err.category, err.kind })
            end)
        end
    end)

    describe("the structure", function()
        local cases = {
            { "one to three unique tags", '{"category":"llm","tags":["LLM","推理"]}' },
            { "needs-review, the honest answer", '{"category":"needs-review","tags":["食譜"]}' },
            { "a tag of exactly 20 code points", '{"category":"llm","tags":["一二三四五六七八九十一二三四五六七八九十"]}' },
            { "no tags", '{"category":"llm","tags":[]}', "schema", { { "/tags", "minItems" } } },
            { "four tags", '{"category":"llm","tags":["a","b","c","d"]}', "schema", { { "/tags", "maxItems" } } },
            { "a duplicate tag", '{"category":"llm","tags":["LLM","LLM"]}', "schema", { { "/tags", "uniqueItems" } } },
            { "an empty tag", '{"category":"llm","tags":[""]}', "schema",
              { { "/tags/0", "minLength" }, { "/tags/0", "pattern" } } },
            { "a tag of 21 code points", '{"category":"llm","tags":["一二三四五六七八九十一二三四五六七八九十x"]}', "schema",
              { { "/tags/0", "maxLength" } }, { "/tags/0 has 21 characters, maximum 20" } },
            { "a control character in a tag", '{"category":"llm","tags":["a\\u0007b"]}', "schema",
              { { "/tags/0", "pattern" } },
              { '/tags/0 "a\\u0007b" has a control character or leading/trailing whitespace' } },
            { "a leading space", '{"category":"llm","tags":[" LLM"]}', "schema", { { "/tags/0", "pattern" } },
              { '/tags/0 " LLM" has a control character or leading/trailing whitespace' } },
            { "a trailing newline", '{"category":"llm","tags":["LLM\\n"]}', "schema", { { "/tags/0", "pattern" } } },
            { "tag 12 is not \"12\"", '{"category":"llm","tags":[12]}', "schema", { { "/tags/0", "type" } },
              { "/tags/0 is number, expected string" } },
            { "an unknown category", '{"category":"cooking","tags":["炒飯"]}', "schema", { { "/category", "enum" } } },
            { "a third field", '{"category":"llm","tags":["a"],"confidence":0.9}', "schema",
              { { "/confidence", "additionalProperties" } } },
            { "a duplicate key", '{"category":"llm","category":"ai-apps","tags":["a"]}', "format", "duplicate_key", 18 },
            { "a second object after the first", '{"category":"llm","tags":["a"]}{"category":"llm","tags":["a"]}',
              "format", "trailing_content", 31 },
        }
        for _, c in ipairs(cases) do
            it(c[1], function()
                local v, err = ex.contract:check(c[2])
                if not c[3] then
                    assert.is_table(v)
                    return
                end
                assert.is_nil(v)
                assert.equal(c[3], err.category)
                if c[3] == "format" then
                    assert.same({ c[4], c[5] }, { err.kind, err.offset })
                else
                    assert.same(c[4], errs(err))
                    if c[5] then
                        for i, m in ipairs(c[5]) do assert.equal(m, err.errors[i].message) end
                    end
                end
            end)
        end
    end)

    describe("evidence", function()
        it("keeps every attempt, failures too, with model, prompt version, time, kind and elapsed time", function()
            local sentinel = "sk-blog-SENTINEL-0123456789"
            local _, _, log = ask("cut post", { api_key = sentinel })
            assert.equal(1, #log.lines)
            local rec = core.decode(log.lines[1])
            assert.same({ "fake-1", "1.0.0", "protocol", "truncated", "max_tokens", 200 },
                { rec.model, rec.contract.version, rec.gate, rec.category, rec.kind, rec.http_status })
            assert.truthy(rec.ts:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$"))
            assert.equal("number", type(rec.elapsed_ms))
            assert.is_string(rec.request_id)
            assert.falsy(log.lines[1]:find(sentinel, 1, true))
            assert.is_nil(rec.headers)
        end)
    end)

    describe("protocol and meaning", function()
        it("finish_reason length is rejected even though the JSON looks whole", function()
            local out, r = ask("cut post")
            assert.equal("invalid", r.kind)
            assert.equal("truncated", out.reason.category)
        end)
        it("needs-review comes back as a typed result and counts as needing review", function()
            local out, r = ask("unrelated post")
            assert.equal("needs_review", r.kind)
            local m = evidence.metrics()
            m:observe_outcome(out)
            assert.equal(1, m:summary().needs_clarification)
        end)
        it("'llm' for a fried-rice recipe passes structure: only labelled data can call it wrong", function()
            local _, r = ask("recipe: fried rice")
            assert.equal("valid", r.kind)
            assert.equal("llm", r.value.category)
        end)
    end)
end)
