--- The blog classifier with evidence (after a Java 8 + Gson program): a category and
-- 1-3 tags for a blog post, where every attempt is kept as evidence and a saved reply can be
-- replayed offline (`bin/jsoncontract replay`).
-- A job module (`jsoncontract run --job examples/blog_category.lua --input examples/blog_category.jsonl`);
-- it returns `{ contract = ..., item = ..., context = false, schema = ..., adapters = ..., policy = ...,
-- result = function }`.
--
-- What it shows:
-- * `needs-review` is the honest answer for an unrelated post or one without enough basis;
-- * tags: 1-3, no duplicates, each at most 20 Unicode code points, no control characters and no
--   leading or trailing whitespace; 12 is not "12" (types are real);
-- * exactly two fields, no duplicate keys, nothing after the object (the strict format gate);
-- * a real reply came back wrapped in a ```json fence: rejected strictly, accepted only with
--   the narrow adapter `unwrap-one-json-fence` (M.adapters), which is recorded in the outcome
--   and in the evidence, so a replay reaches the same verdict;
-- * structure is not meaning: "llm" for a fried-rice recipe passes every gate here and is still
--   wrong; only labelled data can tell.
--
-- Run it: `bin/jsoncontract examples blog_category`; a saved reply:
--   bin/jsoncontract check --job examples/blog_category.lua --adapter unwrap-one-json-fence reply.txt
-- Specs: spec/example_blog_category_spec.lua.
local jc = require "jsoncontract"

local M = {}

-- One character that is neither white space (also Unicode separators such as U+00A0) nor a
-- control character at each end, no control character anywhere.
local TAG_PATTERN = "^[^\\s\\p{Z}\\p{Cc}](?:[^\\p{Cc}]*[^\\s\\p{Z}\\p{Cc}])?$"

M.schema = {
    type = "object",
    properties = {
        category = { type = "string", enum = { "ai-apps", "llm", "embodied-ai", "needs-review" },
            description = "needs-review when the post is unrelated or gives not enough basis" },
        tags = { type = "array", minItems = 1, maxItems = 3, uniqueItems = true,
            items = { type = "string", minLength = 1, maxLength = 20, pattern = TAG_PATTERN } },
    },
    required = { "category", "tags" },
    additionalProperties = false,
}

M.contract = jc.contract {
    name = "blog_category",
    version = "1.0.0",
    schema = M.schema,
    instructions = "You classify blog posts about AI. Give the category and one to three short tags. " ..
        "When the post is unrelated or does not give enough basis, answer needs-review.",
    examples = {
        { input = "如何用大模型API搭建多輪對話客服", output = { category = "ai-apps", tags = { "LLM應用", "客服" } } },
    },
    messages = { ["/properties/tags/items/pattern"] = "has a control character or leading/trailing whitespace" },
}

--- The one adapter this program allows, named so it is recorded when used.
M.adapters = { "unwrap-one-json-fence" }

--- The item the model reads from one input line `{id, text, ...}`: its text, under its id.
-- @tparam table record a decoded line
-- @treturn[1] table `{id, text}`
-- @return[2] nil
-- @treturn[2] string why
function M.item(record)
    if type(record) ~= "table" or type(record.text) ~= "string" then return nil, "has no string field 'text'" end
    return { id = record.id, text = record.text }
end

--- No rules, no context.
M.context = false

--- That program makes no automatic retry: one answer, checked, kept as evidence.
M.policy = { max_attempts = 1 }

--- The typed result: `{kind = "valid", value =}`, `{kind = "needs_review", value =}` (the model
-- said needs-review: a person decides; counted as needing review in the metrics) or
-- `{kind = "invalid", reason = err}`.
function M.result(outcome)
    if outcome.status ~= "accepted" then return { kind = "invalid", reason = outcome.reason } end
    if outcome.value.category == "needs-review" then
        outcome.needs_clarification = true
        return { kind = "needs_review", value = outcome.value }
    end
    return { kind = "valid", value = outcome.value }
end

return M
