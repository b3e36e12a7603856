-- Every public function of lua/ (a field of the module's table: `_M`, `C`, `M`, `W`) sits right
-- under its doc comment: LDoc and a reader take the comment block just above a statement as its
-- doc, so a cache table put between the two takes the function's doc and leaves it without one.
local function lua_files()
    local p = assert(io.popen("find lua -name '*.lua' | sort"))
    local files = {}
    for f in p:lines() do files[#files + 1] = f end
    p:close()
    return files
end

describe("the public functions of lua/", function()
    it("are each right under a doc comment", function()
        local bad, seen = {}, 0
        for _, path in ipairs(lua_files()) do
            local prev, n = "", 0
            for line in io.lines(path) do
                n = n + 1
                if line:match("^function _M[.:]") or line:match("^function C[.:]") or line:match("^function M[.:]")
                    or line:match("^function W[.:]") then
                    seen = seen + 1
                    if not prev:match("^%-%-") then bad[#bad + 1] = path .. ":" .. n .. ": " .. line end
                end
                prev = line
            end
        end
        assert.truthy(seen > 300, "found " .. seen .. " public functions (run from the repository's root)")
        assert.same({}, bad)
    end)
end)
