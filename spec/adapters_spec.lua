-- jsoncontract.contract.adapters: the two named adapters, each rule of
-- their contract, and that contract:check records which one was applied.
local adapters = require "jsoncontract.contract.adapters"
local jc = require "jsoncontract"

local FENCE = "unwrap-one-json-fence"
local THINK = "strip-leading-think-block"
local BODY = '{"a": 1, "b": "x"}'

-- apply() with one adapter: returns text, applied names or nil, err.
local function run(name, text)
    return adapters.apply(text, { name })
end

local function rejected(name, text, fragment)
    local out, err = run(name, text)
    assert.is_nil(out, text)
    assert.equal("format", err.category)
    assert.equal("adapter_rejected", err.kind)
    assert.equal(name, err.adapter)
    assert.equal(require("jsoncontract.core").error_mt, getmetatable(getmetatable(err)))
    if fragment then assert.truthy(err.message:find(fragment, 1, true), err.message) end
end

describe("jsoncontract.contract.adapters", function()
    describe("unwrap-one-json-fence", function()
        it("unwraps exactly one fence covering the whole content", function()
            local out, applied = run(FENCE, "```json\n" .. BODY .. "\n```")
            assert.equal(BODY, out)
            assert.same({ FENCE }, applied)
        end)

        it("allows only whitespace around the fence, and CRLF line ends", function()
            assert.equal(BODY, (run(FENCE, "\n  ```json\n" .. BODY .. "\n```  \n")))
            assert.equal(BODY, (run(FENCE, "```json\r\n" .. BODY .. "\r\n```\r\n")))
            assert.equal(BODY, (run(FENCE, "```JSON\n" .. BODY .. "\n```")))
            -- an untagged fence is a JSON fence too; any other tag is not
            assert.equal(BODY, (run(FENCE, "```\n" .. BODY .. "\n```")))
        end)

        it("leaves text without a fence alone and does not record itself", function()
            local out, applied = run(FENCE, BODY)
            assert.equal(BODY, out)
            assert.same({}, applied)
            -- and never cuts JSON out of prose: the text goes on unchanged
            local prose = 'Here you go: ' .. BODY .. ' Anything else?'
            out, applied = run(FENCE, prose)
            assert.equal(prose, out)
            assert.same({}, applied)
        end)

        it("leaves a JSON value alone when ``` is only inside one of its strings", function()
            local text = '{"summary": "use ```json\\n{}\\n``` fences"}'
            local out, applied = run(FENCE, text)
            assert.equal(text, out)
            assert.same({}, applied)
            assert.equal("use ```json\n{}\n``` fences", jc.decode(out).summary)
        end)

        it("rejects text before the fence", function()
            rejected(FENCE, "Sure! Here it is:\n```json\n" .. BODY .. "\n```", "text before or after")
        end)

        it("rejects text after the fence", function()
            rejected(FENCE, "```json\n" .. BODY .. "\n```\nHope this helps.", "text before or after")
        end)

        it("rejects two blocks", function()
            rejected(FENCE, "```json\n" .. BODY .. "\n```\n```json\n" .. BODY .. "\n```", "more than one")
            rejected(FENCE, "```json\n{}\n```\nand\n```json\n[]\n```", "more than one")
        end)

        it("rejects an unclosed fence, another language, a fence on one line", function()
            rejected(FENCE, "```json\n" .. BODY)
            rejected(FENCE, "```jsonc\n" .. BODY .. "\n```")
            rejected(FENCE, "```python\n" .. BODY .. "\n```")
            rejected(FENCE, "```json " .. BODY .. "```")
        end)
    end)

    describe("strip-leading-think-block", function()
        it("removes one closed <think> block at the very start", function()
            local out, applied = run(THINK, "<think>The mail asks about 5531.</think>\n" .. BODY)
            assert.equal(BODY, out)
            assert.same({ THINK }, applied)
            assert.equal(BODY, (run(THINK, "\n <think>\nmulti\nline\n</think>" .. BODY)))
        end)

        it("stops at the first </think>: a later one in the value stays", function()
            local value = '{"note": "</think>"}'
            assert.equal(value, (run(THINK, "<think>r</think>" .. value)))
        end)

        it("leaves a <think> that is not at the very start alone", function()
            local text = "Sure. <think>r</think>" .. BODY
            local out, applied = run(THINK, text)
            assert.equal(text, out)
            assert.same({}, applied)
        end)

        it("removes only one block: a second one stays and fails the format gate", function()
            local out, applied = run(THINK, "<think>a</think><think>b</think>" .. BODY)
            assert.equal("<think>b</think>" .. BODY, out)
            assert.same({ THINK }, applied)
            local v, err = jc.decode(out)
            assert.is_nil(v)
            assert.equal("unexpected_character", err.kind)
            assert.equal(0, err.offset)
        end)

        it("rejects an unclosed or nested block", function()
            rejected(THINK, "<think>still thinking " .. BODY, "unclosed")
            rejected(THINK, "<think>a <think>b</think> c</think>" .. BODY, "nested")
        end)
    end)

    describe("apply()", function()
        it("applies in the order given and records each adapter that changed the text", function()
            local text = "<think>r</think>\n```json\n" .. BODY .. "\n```"
            local out, applied = adapters.apply(text, { THINK, FENCE })
            assert.equal(BODY, out)
            assert.same({ THINK, FENCE }, applied)
            -- the other order: the fence adapter sees text before its fence
            rejected(FENCE, text)
            out, applied = adapters.apply("```json\n" .. BODY .. "\n```", { THINK, FENCE })
            assert.equal(BODY, out)
            assert.same({ FENCE }, applied)
        end)

        it("raises on an unknown adapter name", function()
            assert.has_error(function() adapters.apply("{}", { "first-brace-to-last-brace" }) end,
                "unknown adapter 'first-brace-to-last-brace' (known: strip-leading-think-block, unwrap-one-json-fence)")
        end)
    end)

    describe("contract:check()", function()
        local c = jc.contract {
            name = "adapters_spec", version = "1.0.0", instructions = "Return the object.",
            schema = { type = "object", properties = { a = { type = "integer" } }, required = { "a" } },
        }

        it("is strict by default: a fenced reply fails the format gate", function()
            local v, err = c:check("```json\n{\"a\": 1}\n```")
            assert.is_nil(v)
            assert.equal("format", err.category)
            assert.equal("unexpected_character", err.kind)
            assert.equal(0, err.offset)
        end)

        it("records the adapters applied, on success and on a later gate's failure", function()
            local v, report = c:check("<think>x</think>```json\n{\"a\": 1}\n```", { adapters = { THINK, FENCE } })
            assert.equal(1, v.a)
            assert.same({ THINK, FENCE }, report.adapters)
            local nv, err = c:check("```json\n{\"a\": \"1\"}\n```", { adapters = { THINK, FENCE } })
            assert.is_nil(nv)
            assert.equal("schema", err.category)
            assert.same({ FENCE }, err.adapters)
        end)

        it("names positions in the model's own reply, not in the text an adapter cut from it", function()
            local both = { adapters = { THINK, FENCE } }
            -- format: the trailing comma is on line 4 of the reply (line 1 of the fence's body)
            local v, err = c:check("<think>é\n</think>\n```json\n{\"a\": 1,}\n```", both)
            assert.is_nil(v)
            assert.equal("format", err.category)
            assert.same({ 4, 9, 35 }, { err.line, err.column, err.offset })
            assert.truthy(err.message:find("at line 4, column 9", 1, true), err.message)
            -- schema: the failing value "1" on line 3 of the reply
            v, err = c:check("```json\n{\n  \"a\": \"1\"}\n```", both)
            assert.is_nil(v)
            assert.equal("schema", err.category)
            assert.same({ 3, 8, 17 }, { err.errors[1].line, err.errors[1].column, err.errors[1].offset })
            -- an adapter later in the chain rejects text after the fence: line 3 of the reply
            v, err = c:check("<think>x</think> ```json\n{\"a\":1}\n``` x", both)
            assert.is_nil(v)
            assert.equal("adapter_rejected", err.kind)
            assert.same({ 3, 5, 37 }, { err.line, err.column, err.offset })
            -- without adapters that changed the text nothing moves
            err = select(2, c:check("{\"a\": 1,}", both))
            assert.same({ 1, 9, 8 }, { err.line, err.column, err.offset })
        end)
    end)
end)
