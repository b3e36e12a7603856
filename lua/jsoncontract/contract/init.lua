--- Contracts: a JSON Schema, a version, the instructions that name it, examples and
-- business rules in Lua (docs/api.md, "Contracts"). The prompt is rendered from the schema, so what the
-- model is told and what is checked cannot drift apart.
-- @module jsoncontract.contract
local core = require "jsoncontract.core"
require "jsoncontract.ffi" -- on LuaJIT: validator:check_json through the FFI (see that module)
local adapters = require "jsoncontract.contract.adapters"
local feedback = require "jsoncontract.feedback"
local rules_gate = require "jsoncontract.contract.rules"
local json_util = require "jsoncontract.json"
local deepcopy, clip = json_util.deepcopy, json_util.clip

local type, pairs, ipairs, tostring, setmetatable, getmetatable, pcall, error =
    type, pairs, ipairs, tostring, setmetatable, getmetatable, pcall, error
local concat, min, tonumber = table.concat, math.min, tonumber
local format, rep = string.format, string.rep

local _M = { _VERSION = core._VERSION }
local mt = { __index = _M }

-- decode(text, {keep_order = true}) gives each object an `__order` metatable (the tape
-- decoder, csrc/tape.c): a JSON-text schema keeps the author's property order.
local CANONICAL = { keep_order = false }

local null = core.null

local KNOWN_FIELDS = {
    name = true, version = true, schema = true, instructions = true, examples = true,
    rules = true, rules_budget = true, adapters = true, format_assertion = true, messages = true,
    work_budget = true, trusted = true, reask_history = true,
}

--- What a re-ask resends (`reask_history`): "last" (the input, the last reply and the errors
-- found in it) or "all" (every earlier attempt and its errors).
local REASK_HISTORY = { last = true, all = true }

-- Render a JSON value for the prompt (compact JSON).
local function json(v)
    return core.encode(v)
end

local property_order = json_util.property_order

--- The `type` keyword of a (sub)schema as a new list (JSON Schema 2020-12 validation §6.1.1:
-- a string or an array of strings).
-- @tparam table schema a schema object
-- @treturn table array of type names, empty when `type` is absent
local function type_list(schema)
    local t = schema.type
    if type(t) == "string" then return { t } end
    if type(t) == "table" then
        local out = {}
        for i = 1, #t do out[i] = t[i] end
        return out
    end
    return {}
end
_M.type_list = type_list

-- Bounds on what the prompt says of one field: `$ref`s followed in a row (a cycle stops
-- there), nesting of anyOf/oneOf, branches named, and bytes of one line.
local MAX_REFS, MAX_NEST, MAX_BRANCHES, MAX_LINE = 8, 3, 6, 600

-- A local `$ref` ("#", "#/$defs/x", JSON Pointer escapes ~0 ~1 and %XX) followed in `root`,
-- up to MAX_REFS in a row; anything else (a remote ref, a missing target, a cycle) is
-- returned as it is.
local function resolve(schema, root)
    for _ = 1, MAX_REFS do
        if type(schema) ~= "table" or type(schema["$ref"]) ~= "string" or type(root) ~= "table" then
            return schema
        end
        local ref = schema["$ref"]
        if ref:sub(1, 1) ~= "#" then return schema end
        local node = root
        for token in ref:sub(2):gmatch("/([^/]*)") do
            token = token:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
                :gsub("~1", "/"):gsub("~0", "~")
            if type(node) ~= "table" then return schema end
            node = node[tonumber(token) and #node > 0 and tonumber(token) + 1 or token]
        end
        if node == nil then return schema end
        schema = node
    end
    return schema
end

local describe_in -- below

-- "one of: A | B | ..." for an anyOf / oneOf, each branch described (bounded).
local function branches(list, root, nest)
    if nest >= MAX_NEST then return "one of several forms" end
    local out = {}
    for i = 1, min(#list, MAX_BRANCHES) do out[i] = describe_in(list[i], root, nest + 1) end
    if #list > MAX_BRANCHES then out[#out + 1] = format("%d more", #list - MAX_BRANCHES) end
    return "one of: " .. concat(out, " | ")
end

-- One line describing a (sub)schema: types, allowed values and limits. `root`: the schema local
-- `$ref`s point into; `nest`: anyOf/oneOf levels already open.
function describe_in(schema, root, nest)
    local own = schema
    schema = resolve(schema, root)
    if schema == true then return "any JSON value" end
    if schema == false then return "nothing is allowed here" end
    if type(schema) ~= "table" then return "any JSON value" end
    local parts = {}
    local types = type_list(schema)
    local nullable = false
    local main = {}
    for _, t in ipairs(types) do
        if t == "null" then nullable = true else main[#main + 1] = t end
    end
    if schema.enum ~= nil then
        local vals = {}
        for i = 1, #schema.enum do
            if schema.enum[i] == null then nullable = true else vals[#vals + 1] = json(schema.enum[i]) end
        end
        parts[#parts + 1] = (#main > 0 and concat(main, " or ") .. ", " or "") .. "one of " .. concat(vals, ", ")
    elseif schema.const ~= nil then
        parts[#parts + 1] = "exactly " .. json(schema.const)
    elseif #main > 0 then
        parts[#parts + 1] = concat(main, " or ")
    elseif type(schema.anyOf) ~= "table" and type(schema.oneOf) ~= "table" then
        parts[#parts + 1] = (type(schema.properties) == "table" or type(schema.required) == "table") and "object"
            or (nullable and #types > 0) and "null" or "any JSON value"
        if parts[#parts] == "null" then nullable = false end
    end
    for _, kw in ipairs { "anyOf", "oneOf" } do
        if type(schema[kw]) == "table" and #schema[kw] > 0 then
            parts[#parts + 1] = branches(schema[kw], root, nest or 0)
        end
    end
    if type(schema.properties) == "table" and (nest or 0) > 0 then
        -- (inside a branch no field list follows: name the fields here)
        local names = property_order(schema)
        local shown = {}
        for i = 1, min(#names, MAX_BRANCHES) do shown[i] = names[i] end
        parts[#parts + 1] = "with fields " .. concat(shown, ", ") .. (#names > MAX_BRANCHES and ", ..." or "")
    end
    if schema.format then parts[#parts + 1] = "format " .. tostring(schema.format) end
    if schema.pattern then parts[#parts + 1] = "matching the regular expression " .. tostring(schema.pattern) end
    local function count(n, what) return n .. " " .. what .. (n == 1 and "" or "s") end
    if schema.minLength then parts[#parts + 1] = "at least " .. count(schema.minLength, "character") end
    if schema.maxLength then parts[#parts + 1] = "at most " .. count(schema.maxLength, "character") end
    if schema.minimum then parts[#parts + 1] = "minimum " .. json(schema.minimum) end
    if schema.maximum then parts[#parts + 1] = "maximum " .. json(schema.maximum) end
    if schema.minItems then parts[#parts + 1] = "at least " .. count(schema.minItems, "item") end
    if schema.maxItems then parts[#parts + 1] = "at most " .. count(schema.maxItems, "item") end
    if schema.uniqueItems then parts[#parts + 1] = "no duplicate items" end
    local text = concat(parts, ", ")
    if nullable then text = text .. ", or null" end
    local desc = type(own) == "table" and own.description or schema.description
    if type(desc) == "string" then text = text .. " (" .. desc .. ")" end
    return clip(text, MAX_LINE)
end

-- The public form: `root` optional (a schema's own `$ref`s need it).
local function describe(schema, root)
    return describe_in(schema, root or schema, 0)
end

local function render_fields(schema, indent, lines, root)
    root = root or schema
    if indent > 2 * MAX_REFS then return end -- (a schema that nests through $refs forever)
    local required = {}
    if type(schema.required) == "table" then
        for _, name in ipairs(schema.required) do required[name] = true end
    end
    for _, name in ipairs(property_order(schema)) do
        local sub = resolve(schema.properties[name], root)
        lines[#lines + 1] = format("%s- %s: %s%s", rep("  ", indent), name,
            describe_in(schema.properties[name], root, 0), required[name] and "" or " (optional)")
        local items = type(sub) == "table" and resolve(sub.items, root)
        if type(sub) == "table" and sub.properties then
            render_fields(sub, indent + 1, lines, root)
        elseif type(items) == "table" and items.properties then
            lines[#lines + 1] = rep("  ", indent + 1) .. "each item is an object with:"
            render_fields(items, indent + 2, lines, root)
        elseif type(items) == "table" then
            -- (a list of strings or numbers: what each must be is part of the contract too)
            lines[#lines + 1] = rep("  ", indent + 1) .. "each item: " .. describe_in(sub.items, root, 0)
        end
    end
    if schema.additionalProperties == false then
        lines[#lines + 1] = rep("  ", indent) .. "- no other fields"
    end
end

local render_prompt -- below: the system prompt's text (see `prompt`)

--- Define a contract.
-- @tparam table def fields:
--   `name` (string, required), `version` (string, required, e.g. "1.0.0"),
--   `schema` (table or JSON text, required: a JSON Schema; compiled with format assertion on),
--   `instructions` (string, required: what the model must do, in plain words),
--   `examples` (optional list of `{input = string, output = value}`; each output must match the
--   schema: it is shown to the model as an answer),
--   `rules` (optional list of rules; a rule is a function `f(value, ctx)`, Lua source text run
--   in the rules' sandbox, or a table `{name = string, check = f or source, retry = boolean
--   (default true), budget = {steps =, ms =, mb =}}`; `f`
--   gets its own copy of the value and returns nothing when it passes, else a message string, one
--   error `{pointer =, message =}` or a list of them; see `jsoncontract.contract.rules`). A
--   function given here is host code, trusted like the caller's own: not sandboxed; its
--   budgets hold for its own code (unless it removes them with `debug.sethook`), but
--   coroutines it makes with the global `coroutine` run outside them (a loop in one is
--   stopped by nothing); rules from `jc.load_contract` or source text are sandboxed,
--   `rules_budget` (optional `{steps =, ms =, mb =, item_steps =, item_ms =}`: VM instructions,
--   milliseconds and MiB per rule, steps and milliseconds per item, defaults
--   `jsoncontract.contract.rules.DEFAULT_BUDGET`),
--   `trusted` (boolean, default false: rules given as source text run with the process's
--   globals, and a contract file loaded by `jc.load_contract` is loaded as plain Lua),
--   `adapters` (optional list of adapter names applied before parsing, see `jsoncontract.contract.adapters`),
--   `format_assertion` (boolean, default true),
--   `work_budget` (integer, optional: work units per validation, see `jc.compile`),
--   `messages` (optional map from a schema location, e.g. "/properties/order_id/pattern", to the
--   words that replace the validator's for an error there: the message becomes
--   `<pointer> <value> <words>`, e.g. `/order_id "10420" does not have 4 digits`),
--   `reask_history` ("last" (default) | "all": what a re-ask resends; "last" sends the input,
--   the last reply and its errors, "all" every earlier attempt and its errors).
-- @treturn table contract
-- @raise on a missing or mistyped field, an unknown field, a schema that is not a schema, or an
--   example output the schema refuses
-- @usage local c = jc.contract{ name = "ticket", version = "1", schema = {...}, instructions = "..." }
function _M.new(def)
    if type(def) ~= "table" then error("contract definition must be a table", 2) end
    for k in pairs(def) do
        if not KNOWN_FIELDS[k] then error("unknown contract field '" .. tostring(k) .. "'", 2) end
    end
    for _, f in ipairs { "name", "version", "instructions" } do
        if type(def[f]) ~= "string" or def[f] == "" then
            error("contract field '" .. f .. "' must be a non-empty string", 2)
        end
    end
    local schema = def.schema
    if type(schema) ~= "table" and type(schema) ~= "boolean" and type(schema) ~= "string" then
        error("contract field 'schema' must be a table or JSON text", 2)
    end
    -- From JSON text, core.compile reads the numbers as written and returns the schema value
    -- with the author's property order (it reaches the provider and the prompt).
    local ok, validator, decoded = pcall(core.compile, schema,
        { format_assertion = def.format_assertion ~= false, work_budget = def.work_budget })
    if not ok then
        -- text that is not JSON: "contract schema is not JSON: <format error>"
        if type(validator) == "string" and validator:find("^schema is not JSON: ") then
            error("contract " .. validator, 2)
        end
        error("contract '" .. def.name .. "': " .. tostring(validator), 2)
    end
    if type(schema) == "string" then
        schema = decoded
    elseif type(schema) == "table" then
        -- The contract's own copy (compile checked it is JSON: no cycle, bounded depth): the
        -- author may change or reuse the table afterwards, and what is sent to the provider,
        -- put in the prompt and hashed must stay what the validator checks.
        schema = deepcopy(schema)
    end

    for _, f in ipairs { "rules", "examples", "adapters" } do
        if def[f] ~= nil and type(def[f]) ~= "table" then
            error("contract field '" .. f .. "' must be a list (table)", 2)
        end
    end
    if def.trusted ~= nil and type(def.trusted) ~= "boolean" then
        error("contract field 'trusted' must be a boolean", 2)
    end
    local rules, rules_budget = rules_gate.normalize(def.rules, def.rules_budget, { trusted = def.trusted })
    for i, name in ipairs(def.adapters or {}) do
        if type(name) ~= "string" then error("contract adapter " .. i .. " must be a name (string)", 2) end
        if not adapters.known(name) then
            error("contract: unknown adapter '" .. name .. "' (known: " .. concat(adapters.names, ", ") .. ")", 2)
        end
    end
    for i, ex in ipairs(def.examples or {}) do
        if type(ex) ~= "table" or type(ex.input) ~= "string" or ex.output == nil then
            error("contract example " .. i .. " must be {input = string, output = value}", 2)
        end
    end
    if def.reask_history ~= nil and not REASK_HISTORY[def.reask_history] then
        error("contract field 'reask_history' must be \"last\" or \"all\"", 2)
    end
    if def.messages ~= nil and type(def.messages) ~= "table" then
        error("contract field 'messages' must be a table", 2)
    end
    for k, v in pairs(def.messages or {}) do
        if type(k) ~= "string" or type(v) ~= "string" then
            error("contract messages must map schema locations (strings) to strings", 2)
        end
    end
    local self = {
        messages = def.messages,
        reask_history = def.reask_history or "last",
        name = def.name,
        version = def.version,
        schema = schema,
        instructions = def.instructions,
        examples = deepcopy(def.examples or {}),
        rules = rules,
        rules_budget = rules_budget,
        trusted = def.trusted or nil,
        adapters = def.adapters or {},
        validator = validator,
        -- Canonical encoding (sorted keys, `__order` ignored) makes the hash independent of
        -- table and property order.
        schema_hash = core.sha256(core.encode(schema, CANONICAL)),
        -- What the provider modules compute from this contract (the schema copy each sends,
        -- its findings), filled on first use and kept: a contract is not changed once made, so
        -- an ask builds no view of it and no provider plans its schema twice (see
        -- jsoncontract.providers.schema_subset.cached).
        provider_plans = {},
    }
    setmetatable(self, mt)
    -- Rendered once, here: every request of every ask sends this string (the native prompts,
    -- one per provider, on first use).
    self._prompt = render_prompt(self)
    self._native_prompts = {}
    return self
end

local render_native -- below

--- The system prompt for a request.
-- Modes "prompt" and "json" (and no mode) get the full prompt: the instructions, then the
-- contract's name and version, then the fields, types and allowed values rendered from the
-- schema, then the examples. Mode "native" with a provider name gets the short prompt when
-- that provider is sent the schema: the instructions, the contract's name and version, what
-- the provider will not enforce or pass on (each keyword `lint` lists, e.g. a `pattern` or a
-- `description` left out of the copy sent), and the examples; the types, patterns and bounds
-- the native schema carries are not repeated. A native request that falls back (the provider
-- cannot take the schema) gets the full prompt. Each text is rendered once per contract.
-- @tparam[opt] string mode "native" | "json" | "prompt"
-- @tparam[opt] string provider a name from `jsoncontract.providers.names`
-- @treturn string
function _M.prompt(self, mode, provider)
    if mode ~= "native" or type(provider) ~= "string" then return self._prompt end
    local text = self._native_prompts[provider]
    if text == nil then
        text = render_native(self, provider) or self._prompt
        self._native_prompts[provider] = text
    end
    return text
end

-- Each example's answer against the schema. The prompt shows them as answers to copy, so one
-- the gates would refuse teaches the model to be refused; a contract with one is not made.
-- (Rules are not run here: they may need the request's context, which a contract has not.)
-- `level`: the error's level, pointing at the caller of `new`.
local function check_examples(self, level)
    for i, ex in ipairs(self.examples) do
        local ok, err = self.validator:validate(ex.output)
        if not ok then
            error(format("contract '%s': example %d answer does not match the schema: %s", self.name, i,
                tostring(err and err.message)), level + 1)
        end
    end
end

function render_prompt(self)
    -- (called from `new` only: level 4 is the caller of `new`)
    check_examples(self, 3)
    local lines = { self.instructions, "", format("Contract: %s, version %s.", self.name, self.version) }
    local schema = self.schema
    if type(schema) == "table" and (schema.type == "object" or schema.properties) then
        lines[#lines + 1] = "Answer with exactly one JSON object and nothing else: no prose, no code fence."
        lines[#lines + 1] = "Fields (all required unless marked optional):"
        render_fields(schema, 0, lines, schema)
    else
        lines[#lines + 1] = "Answer with exactly one JSON value and nothing else: " .. describe(schema) .. "."
    end
    lines[#lines + 1] = "Never invent a value: where the input does not say, use null if the field allows it."
    for i, ex in ipairs(self.examples) do
        lines[#lines + 1] = ""
        lines[#lines + 1] = format("Example %d input: %s", i, tostring(ex.input))
        lines[#lines + 1] = format("Example %d answer: %s", i, json(ex.output))
    end
    return concat(lines, "\n")
end

-- A field path for the prompt from a schema pointer: "/properties/a/items/properties/b/pattern"
-- -> "a[].b"; the keyword is the last token.
local function field_of(pointer)
    local path, out = {}, ""
    for token in pointer:gmatch("/([^/]*)") do path[#path + 1] = token:gsub("~1", "/"):gsub("~0", "~") end
    local i = 1
    while i < #path do
        local t = path[i]
        if (t == "properties" or t == "$defs" or t == "definitions") and i + 1 < #path then
            out = out .. (out == "" and "" or ".") .. path[i + 1]
            i = i + 2
        elseif t == "items" or t == "prefixItems" or t == "additionalItems" then
            out = out .. "[]"
            i = i + (t == "prefixItems" and 2 or 1)
        else
            i = i + 1
        end
    end
    return out == "" and "the answer" or out, path[#path]
end

-- The value at a schema pointer (nil when there is none).
local function value_at(schema, pointer)
    local node = schema
    for token in pointer:gmatch("/([^/]*)") do
        token = token:gsub("~1", "/"):gsub("~0", "~")
        if type(node) ~= "table" then return nil end
        local n = tonumber(token)
        if n and getmetatable(node) == core.array_mt or (n and node[n + 1] ~= nil) then
            node = node[n + 1]
        else
            node = node[token]
        end
    end
    return node
end

-- The short prompt of a native request through `provider` (its name and version are in the
-- schema name and evidence, not here), or nil when that provider's native
-- request falls back (then the schema is not sent and the full prompt is needed).
function render_native(self, provider)
    local ok, mod = pcall(function() return require("jsoncontract.providers").get(provider) end)
    if not ok or type(mod.native_schema) ~= "function" or type(self.schema) ~= "table" then return nil end
    local ok2, _, _, _, _, plan = pcall(mod.native_schema, self.schema)
    if not ok2 or type(plan) ~= "table" or plan.fallback ~= nil then return nil end
    -- (every word here is paid on every request: the schema sent says the rest)
    local lines = { self.instructions,
        "Answer with JSON only, by the schema sent.",
        "Never invent a value: use null where the input does not say and the field allows it." }
    local subset = require "jsoncontract.providers.schema_subset"
    -- what the provider will not enforce or pass on, one line per field, in schema order
    local fields, said = {}, {}
    for _, f in ipairs(subset.not_enforced(plan.findings or {})) do
        local where, keyword = field_of(f.schema_pointer or "")
        local v = value_at(self.schema, f.schema_pointer or "")
        local part
        if keyword == "description" and type(v) == "string" then
            part = v
        elseif v ~= nil and keyword ~= nil then
            -- (a pattern or format as written, not as a JSON string with its escapes doubled)
            part = keyword .. " " .. (type(v) == "string" and v or json(v))
        end
        if part then
            if not said[where] then
                said[where] = {}
                fields[#fields + 1] = where
            end
            local list = said[where]
            if not list[part] then
                list[part] = true
                list[#list + 1] = part
            end
        end
    end
    if #fields > 0 then
        lines[#lines + 1] = "Also keep to:"
        for _, where in ipairs(fields) do
            local line = format("- %s: %s", where, concat(said[where], ", "))
            lines[#lines + 1] = clip(line, MAX_LINE)
        end
    end
    for i, ex in ipairs(self.examples) do
        local n = #self.examples > 1 and " " .. i or ""
        lines[#lines + 1] = format("Example%s input: %s", n, tostring(ex.input))
        lines[#lines + 1] = format("Example%s answer: %s", n, json(ex.output))
    end
    return concat(lines, "\n")
end

--- Run the business rules on a schema-valid value (see `jsoncontract.contract.rules`):
-- each rule sees its own copy, under the contract's budgets.
-- @param value the checked value (never changed)
-- @param ctx any context the rules need (database handle, sender, ...)
-- @treturn[1] true
-- @return[2] nil
-- @treturn[2] table err, category "rules", kind "rule_failed" (err.retry says whether the model may
--   be asked again: false when any failing rule has `retry = false`), "rule_error" (a rule raised or
--   returned something that is not a verdict), "rule_timeout" (a rule ran over its budget),
--   "rule_memory" (over its memory) or "rule_interrupted" (the run is stopping); the
--   last two are never retried
function _M.check_rules(self, value, ctx)
    return rules_gate.run(self.rules, value, ctx, self.rules_budget)
end

local NO_OPTS = {} -- read only: check without opts allocates no table for them
local WITH_VALUE = { value = true } -- read only: check_json's value for the rules
-- The report of a success that applied no adapter, one for every such check: a success
-- allocates nothing but what it answers (a report and its list made per call cost the
-- worker's allocator and collector inside nginx about 1,000 instructions a request). Read
-- only: a new field raises, and its adapters list is the same empty list for every caller.
local NO_ADAPTERS = setmetatable({}, core.array_mt)
local PLAIN_REPORT = setmetatable({ adapters = NO_ADAPTERS }, {
    __newindex = function(_, k) error("the report of a check is read only (field " .. tostring(k) .. ")", 2) end,
    __metatable = false,
})

-- The gates of `check` and `check_json`: adapters, then format and schema in one C call on
-- the text, then the rules on the value. `as_json`: answer with the accepted JSON text
-- (validator:check_json builds no Lua value unless the contract has rules to run on it).
local function gates(self, text, opts, as_json, caller)
    if type(text) ~= "string" then error(caller .. ": text must be a string, got " .. type(text), 3) end
    if opts ~= nil and type(opts) ~= "table" then error(caller .. ": opts must be a table, got " .. type(opts), 3) end
    opts = opts or NO_OPTS
    local names = opts.adapters or self.adapters
    if type(names) ~= "table" then
        error(caller .. ": opts.adapters must be a list of adapter names, got " .. type(names), 3)
    end
    local reply, shift, applied = text, 0, nil
    if #names > 0 then
        local out, err, at = adapters.apply(text, names)
        if not out then return nil, err end
        text, applied, shift = out, err, at
    end
    local rules = self.rules
    -- format and schema gates in one C call on the text (validator:check): the Lua value
    -- is built only when the reply is valid, and by check_json only for the rules
    local result, err
    if not as_json then
        result, err = self.validator:check(text)
    elseif #rules == 0 then
        result, err = self.validator:check_json(text)
    else
        result, err = self.validator:check_json(text, WITH_VALUE)
    end
    if result == nil then
        if err.category == "schema" and self.messages then
            feedback.apply_overrides(self.messages, err, core.decode(text))
        end
        err.adapters = applied or setmetatable({}, core.array_mt)
        return nil, adapters.reposition(err, reply, shift)
    end
    if #rules > 0 then
        local ok
        ok, err = rules_gate.run(rules, as_json and err or result, opts.context, self.rules_budget, opts.transport)
        if not ok then
            err.adapters = applied or setmetatable({}, core.array_mt)
            return nil, err
        end
    end
    if applied == nil then return result, PLAIN_REPORT end
    return result, { adapters = applied }
end

--- Run the format, schema and rules gates on a reply's content string.
-- @tparam string text the content string (the inner JSON)
-- @tparam[opt] table opts `adapters` (list of names, default the contract's), `context` (passed to rules),
--   `transport` (`function(req) -> res | nil, err`: where a rule's `batch.send` goes outside a batch;
--   default the one `jsoncontract.transport.default` picks)
-- @return[1] the checked value (JSON null is `jsoncontract.null`)
-- @treturn[1] table report `{adapters = {names applied}}`, read only (when no adapter applied,
--   one report shared by every such check: a new field raises)
-- @return[2] nil
-- @treturn[2] table err with `category` format, schema or rules (see docs/design.md); `err.adapters` lists
--   the adapters that were applied
-- @raise when `text` is not a string, `opts` not a table or `opts.adapters` not a list
function _M.check(self, text, opts)
    -- not a tail call: gates' errors blame the caller of check (level 3)
    local result, report = gates(self, text, opts, false, "check")
    return result, report
end

--- Run the same gates as `check`, with the same verdicts and errors, and answer with the
-- accepted JSON text instead of a Lua value: for a caller that hands the checked value on as
-- JSON (an HTTP answer, a queue, a file), which then costs no Lua table. The text is what the
-- format gate accepted, byte for byte (numbers keep their spelling, so integers beyond 2^53
-- stay exact), without the JSON whitespace around the value; after an adapter (e.g. a code
-- fence unwrapped) it is the JSON inside. A contract with rules still builds the value for
-- its rules (they need one), then answers with the text.
-- @tparam string text the content string (the inner JSON)
-- @tparam[opt] table opts as for `check`
-- @treturn[1] string the accepted JSON text
-- @treturn[1] table report `{adapters = {names applied}}`, read only (when no adapter applied,
--   one report shared by every such check: a new field raises)
-- @return[2] nil
-- @treturn[2] table err exactly as `check` returns it
-- @raise as `check`
-- @usage local json, err = c:check_json(reply) -- then ngx.print(json) or nil, err as from check
function _M.check_json(self, text, opts)
    local accepted, report = gates(self, text, opts, true, "check_json")
    return accepted, report
end

--- Facts about the contract for evidence records.
-- @treturn table `{name, version, schema_hash}`
function _M.identity(self)
    return { name = self.name, version = self.version, schema_hash = self.schema_hash }
end

--- One line describing a (sub)schema for the prompt: types, allowed values and limits; a local
-- `$ref` is described by its target, an anyOf / oneOf as "one of: A | B" (bounded: 8 refs in a
-- row, 3 levels, 6 branches, 600 bytes).
-- @function describe
-- @tparam table|boolean schema
-- @tparam[opt] table root the schema its `$ref`s point into (default: `schema` itself)
-- @treturn string e.g. `string, one of "a", "b"` or `integer, minimum 1`
_M.describe = describe

--- An object schema's property names in prompt order (`jsoncontract.json.property_order`).
-- @function property_order
-- @tparam table schema
-- @treturn {string,...}
_M.property_order = property_order

--- Is `v` a contract made by `new`?
-- @param v any value
-- @treturn boolean
function _M.is_contract(v) return getmetatable(v) == mt end

return _M
