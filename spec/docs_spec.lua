-- The documentation's shape: a README of a few hundred lines that maps docs/, and relative
-- links between README.md and docs/*.md that reach a file and, with a #fragment, a heading
-- (GitHub's anchors: lower case, punctuation dropped, spaces as '-'); the examples of
-- docs/api.md run and their asserts hold.
local util = require "support.util"

local LUA = util.LUA
local CPATH = os.getenv("JC_TEST_CPATH") or "build/lua5.4/?.so"

local function docs()
    local files = { "README.md" }
    local p = io.popen("ls docs/*.md")
    for f in p:lines() do files[#files + 1] = f end
    p:close()
    return files
end

-- The anchors GitHub gives the headings of `text` (code blocks skipped), as a set.
local function anchors(text)
    local set, seen, incode = {}, {}, false
    for line in (text .. "\n"):gmatch("(.-)\n") do
        if line:match("^```") then
            incode = not incode
        elseif not incode and line:match("^#+ ") then
            local a = line:gsub("^#+ ", ""):lower():gsub("[^%w%- _]", ""):gsub(" ", "-")
            local n = seen[a]
            seen[a] = (n or 0) + 1
            set[n and (a .. "-" .. n) or a] = true
        end
    end
    return set
end

local function dirname(path) return path:match("^(.*)/") or "." end

describe("the documentation", function()
    it("has a README of a few hundred lines that names every page of docs/", function()
        local readme = assert(util.read("README.md"))
        local _, n = readme:gsub("\n", "")
        assert.is_true(n <= 300, "README.md has " .. n .. " lines")
        for _, f in ipairs(docs()) do
            if f ~= "README.md" then
                assert.truthy(readme:find("](" .. f .. ")", 1, true), f .. " is not in README.md's map")
            end
        end
    end)

    it("links only to files and headings that exist", function()
        local checked = 0
        for _, f in ipairs(docs()) do
            local text = assert(util.read(f))
            for target in text:gmatch("%]%(([^)%s]+)%)") do
                if not target:match("^%a[%w+.-]*:") then        -- not http:, mailto:, ...
                    local path, frag = target:match("^([^#]*)#?(.*)$")
                    local file = path == "" and f or (dirname(f) .. "/" .. path)
                    local body = util.read(file)
                    assert.truthy(body, f .. " links to " .. target .. ": no file " .. file)
                    if frag ~= "" then
                        assert.truthy(anchors(body)[frag], f .. " links to " .. target .. ": no such heading")
                    end
                    checked = checked + 1
                end
            end
        end
        assert.is_true(checked >= 20, "only " .. checked .. " relative links")
    end)

    it("has examples in docs/api.md that run and whose asserts hold", function()
        local api = assert(util.read("docs/api.md"))
        local n = 0
        for code in api:gmatch("```lua\n(.-\n)```\n") do  -- a fence closes on its own line
            n = n + 1
            local script = os.tmpname()
            local f = assert(io.open(script, "wb"))
            f:write('package.path = "lua/?.lua;lua/?/init.lua;" .. package.path\n',
                'package.cpath = "', CPATH, ';" .. package.cpath\n', code)
            f:close()
            local p = io.popen(("%s %s 2>&1; echo \"exit $?\""):format(LUA, script))
            local out = p:read("*a")
            p:close()
            os.remove(script)
            assert.truthy(out:find("exit 0\n", 1, true), "example " .. n .. ":\n" .. code .. "\n" .. out)
        end
        assert.is_true(n >= 6, "only " .. n .. " examples")
    end)
end)
