-- Real-world schemas: ../shared/corpora/schemastore (44 SchemaStore schemas
-- with their CI test instances) and ../shared/corpora/jsonschemabench (119
-- JSONSchemaBench schemas with generated instances). Every schema compiles,
-- every instance under valid/ passes and every one under invalid/ fails, with
-- 'format' asserted (SchemaStore checks with ajv-formats; the drafts come from
-- each schema's $schema, 2020-12 when it has none).
local core = require "jsoncontract.core"

local util = require "support.util"

local SHARED = util.shared()
local read = util.read

local function lines(cmd)
    local out = util.lines(cmd)
    table.sort(out)
    return out
end

-- Checks one corpus with format asserted and, on the same decoded
-- instances, without; returns the counts and the disagreements of each.
local function run(root)
    local c = { schemas = 0, compiled = 0, valid_ok = 0, invalid_ok = 0 }
    local disagreements, loose = {}, {}
    local files = {}
    for _, rel in ipairs(lines('cd "' .. root .. '" && find . -path "*/valid/*.json" -o -path "*/invalid/*.json"')) do
        local dir, kind, file = rel:match("^%./(.+)/(%a+)/([^/]+)$")
        files[dir] = files[dir] or {}
        table.insert(files[dir], { kind, file })
    end
    for _, rel in ipairs(lines('cd "' .. root .. '" && find . -name schema.json')) do
        local name = rel:match("^%./(.+)/schema%.json$")
        local dir = root .. "/" .. name
        c.schemas = c.schemas + 1
        local schema, derr = core.decode(read(dir .. "/schema.json"))
        local ok, v = false, derr
        local ok2, v2
        if schema ~= nil then
            ok, v = pcall(core.compile, schema, { format_assertion = true })
            ok2, v2 = pcall(core.compile, schema)
        end
        if not ok then
            disagreements[#disagreements + 1] = name .. ": refused: " .. tostring(v)
        else
            c.compiled = c.compiled + 1
            for _, f in ipairs(files[name] or {}) do
                local kind, file = f[1], f[2]
                local inst = core.decode(read(dir .. "/" .. kind .. "/" .. file))
                local good, err = v:validate(inst)
                if (good == true) == (kind == "valid") then
                    c[kind .. "_ok"] = c[kind .. "_ok"] + 1
                else
                    disagreements[#disagreements + 1] = name .. "/" .. kind .. "/" .. file
                        .. (err and (": " .. err.message:sub(1, 200)) or ": accepted")
                end
                if ok2 and (v2:validate(inst) == true) ~= (kind == "valid") then
                    loose[#loose + 1] = name .. "/" .. kind .. "/" .. file
                end
            end
        end
    end
    return c, disagreements, loose
end

local CORPORA = {
    -- name, schemas, valid instances, invalid instances (the READMEs' counts)
    { "schemastore", 44, 271, 368 },
    { "jsonschemabench", 119, 174, 394 },
}

describe("real-world schemas", function()
    after_each(function() collectgarbage("collect") end)

    for _, corpus in ipairs(CORPORA) do
        local name, nschemas, nvalid, ninvalid = corpus[1], corpus[2], corpus[3], corpus[4]
        local root = SHARED .. "/corpora/" .. name

        it(name .. ": every schema compiles and every instance gets its expected verdict", function()
            if not read(root .. "/README.md") then
                pending(name .. " not found at " .. root)
                return
            end
            local c, disagreements, loose = run(root)
            print(string.format("\n%s: %d/%d schemas compiled, %d/%d valid passed, %d/%d invalid "
                .. "failed; without format assertion %d invalid accepted",
                name, c.compiled, c.schemas, c.valid_ok, nvalid, c.invalid_ok, ninvalid, #loose))
            assert.same({}, disagreements)
            assert.same({ schemas = nschemas, compiled = nschemas, valid_ok = nvalid,
                          invalid_ok = ninvalid }, c)
            -- without format assertion only invalid instances slip through:
            -- those whose only fault is a format (both READMEs name some)
            for _, d in ipairs(loose) do
                assert.matches("/invalid/[^/]+$", d)
            end
            assert.is_true(#loose >= 5)
        end)
    end
end)
