--- What the stand-in model knows about the blog_category example (SEEDS §4): how it recognises a
-- request for it, what a careful reader fills in, and the mistakes it makes. Loaded by the
-- stand-in (`jsoncontract.standin.conversation.load_examples`); not part of the contract.
local conversation = require "jsoncontract.standin.conversation"
local hash = require "jsoncontract.standin.hash"
local stext = require "jsoncontract.standin.text"

local floor = math.floor
local find, lower = string.find, string.lower
local concat, sort = table.concat, table.sort
local ipairs = ipairs
local jstr, jobj, word_at, ulen = stext.jstr, stext.jobj, stext.word_at, stext.ulen

local NAME = "blog_category"
local _M = { name = NAME, order = 4 }

-- Faults with their share on attempt 1 (the rest is clean JSON); see `FAULTS`.
local FAULTS = {
    { "fenced", 0.06 }, { "enum_language", 0.06 }, { "string_for_array", 0.05 }, { "extra_field", 0.04 },
    { "number_for_string", 0.03 }, { "refusal", 0.02 }, { "truncated", 0.02 }, { "prose", 0.02 },
}

--- The fault names, in draw order: fenced, refusal, truncated, prose as for the support ticket;
-- `enum_language` the enum value in other words; `extra_field`; `number_for_string`; and this
-- contract's own (see the list above).
_M.FAULTS = {}
for i, f in ipairs(FAULTS) do _M.FAULTS[i] = f[1] end


-- {keyword, tag}: the tag the keyword gives (nil = counts but gives no tag of its own).
local BLOG_WORDS = {
    ["embodied-ai"] = {
        { "humanoid", "humanoid" }, { "robot", "robotics" }, { "embodied", "embodied AI" },
        { "manipulation", "manipulation" }, { "locomotion", "locomotion" }, { "sim2real", "sim2real" },
        { "grasp", "grasping" }, { "imitation learning", "imitation learning" }, { "机器人", "机器人" },
        { "機器人", "機器人" }, { "具身", "具身智能" }, { "人形", "人形機器人" }, { "drone", "drones" },
        { "self-driving", "self-driving" }, { "autonomous", "autonomy" },
    },
    llm = {
        { "llm", "LLM" }, { "language model", "language models" }, { "transformer", "transformer" },
        { "scaling law", "scaling laws" }, { "gpt", "GPT" }, { "fine-tun", "fine-tuning" },
        { "pretrain", "pretraining" }, { "rlhf", "RLHF" }, { "attention", "attention" }, { "token", "tokens" },
        { "llama", "Llama" }, { "bert", "BERT" }, { "大模型", "大模型" }, { "大語言模型", "大語言模型" },
        { "大语言模型", "大语言模型" }, { "语言模型", "语言模型" }, { "語言模型", "語言模型" },
        { "微调", "微调" }, { "微調", "微調" }, { "预训练", "预训练" }, { "預訓練", "預訓練" },
    },
    ["ai-apps"] = {
        { "api", "API" }, { "chatbot", "chatbot" }, { "客服", "客服" }, { "rag", "RAG" }, { "agent", "agents" },
        { "pipeline", "pipelines" }, { "workflow", "workflow" }, { "assistant", "assistants" },
        { "copilot", "copilot" }, { "application", "AI apps" }, { "app", "AI apps" }, { "應用", "AI應用" },
        { "应用", "AI应用" }, { "搭建", nil }, { "系統", nil }, { "系统", nil }, { "多輪對話", "多輪對話" },
        { "多轮对话", "多轮对话" }, { "integration", "integration" }, { "集成", "API集成" },
        { "automation", "automation" }, { "deploy", "deployment" }, { "prompt", "prompting" },
    },
}
local BLOG_ORDER = { "embodied-ai", "ai-apps", "llm" } -- tie-break: the more specific first

--- What a keyword reader gives a blog post: a category and 1-3 unique tags (each at most 20
-- code points); needs-review when no AI keyword is found.
-- @tparam string text the post (title or body)
-- @treturn table {category=string, tags={string,...}}
function _M.extract_blog(text)
    local low = lower(text)
    local best, score = "needs-review", 0
    local hits = {}
    for _, cat in ipairs(BLOG_ORDER) do
        local n = 0
        for _, kw in ipairs(BLOG_WORDS[cat]) do
            local s = word_at(low, kw[1])
            if s then
                n = n + 1
                if kw[2] then hits[#hits + 1] = { at = s, tag = kw[2] } end
            end
        end
        if n > score then best, score = cat, n end
    end
    sort(hits, function(a, b)
        if a.at ~= b.at then return a.at < b.at end
        return a.tag < b.tag
    end)
    local tags, seen = {}, {}
    for _, h in ipairs(hits) do
        if #tags >= 3 then break end
        if not seen[h.tag] and ulen(h.tag) <= 20 then
            seen[h.tag] = true
            tags[#tags + 1] = h.tag
        end
    end
    if #tags == 0 then tags[1] = "off-topic" end
    return { category = best, tags = tags }
end

local function blog_json(v, fault, r)
    local category = jstr(v.category)
    local tag_parts = {}
    for i, t in ipairs(v.tags) do tag_parts[i] = jstr(t) end
    local tags = "[" .. concat(tag_parts, ",") .. "]"
    if fault == "enum_language" then
        local words = {
            ["ai-apps"] = { "AI應用", "AI apps", "ai_apps" }, llm = { "大模型", "LLM", "large language models" },
            ["embodied-ai"] = { "具身智能", "robotics", "Embodied AI" }, ["needs-review"] = { "其他", "other", "none" },
        }
        category = jstr(words[v.category][floor(r * 3) + 1])
    elseif fault == "string_for_array" then
        tags = jstr(concat(v.tags, ", "))
    elseif fault == "number_for_string" then
        tag_parts[#tag_parts < 3 and #tag_parts + 1 or 3] = r < 0.5 and "2024" or "12"
        tags = "[" .. concat(tag_parts, ",") .. "]"
    end
    local fields = { { "category", category }, { "tags", tags } }
    if fault == "extra_field" then
        fields[3] = r < 0.5 and { "confidence", "0.9" } or { "reason", jstr("keywords in the title") }
    end
    return jobj(fields, r < 0.3 and " " or nil)
end

local function blog_prose(v)
    return "This post belongs to " .. v.category .. "; tags: " .. concat(v.tags, ", ") .. "."
end

--- A request for this contract: its schema's property names, or (prompt mode) a system prompt
-- naming them all.
_M.recognise = conversation.by_keys { "category", "tags" }

--- The answer for this contract (the input text is `ans.mail`).
-- @tparam table ans `attempt`, `mail`
-- @tparam integer seed
-- @tparam table request (`max_tokens`)
-- @treturn table ans
function _M.answer(ans, seed, request)
    local mail, attempt = ans.mail, ans.attempt
    local v = _M.extract_blog(mail)
    local r = hash.draw(seed, NAME, mail, attempt, "style")
    if find(mail, "[[truncate]]", 1, true) then
        ans.kind, ans.fault, ans.text = "truncated", "truncated", conversation.cut(blog_json(v, nil, r), 0.5)
        return ans
    end
    local fault = conversation.fault_for(seed, { NAME, mail }, FAULTS, attempt)
    return conversation.write(ans, fault, r, v, { json = blog_json, prose = blog_prose }, request.max_tokens)
end

return _M
