-- The FFI path when memory runs out inside the parser: the parse runs as a plain C call
-- (no pcall), and an allocation failure jumps back to its entry point (csrc/ffi.c), which
-- answers -1 and "not enough memory". Shown for real: a LuaJIT process with
-- tools/fail_mmap.c preloaded, where every anonymous mapping over 1 MB fails, parses a
-- 200 KB array whose tape needs 2.4 MB. Afterwards the same context parses again, and
-- validator:check_json gives the C API's memory error (the fallback meets the same limit).
-- Pending on PUC Lua (no FFI) and where no C compiler or Linux mremap is at hand.
local util = require "spec.support.util"
local jffi = require "jsoncontract.ffi"

local CHILD = [[
package.cpath = %q .. ";" .. package.cpath
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
local core = require "jsoncontract.core"
local J = require "jsoncontract.ffi"
local ffi = require "ffi"
assert(J.available, J.reason)
local lib = ffi.load(package.searchpath("jsoncontract.core", package.cpath))
local ctx = lib.jc_ffi_new()
local entries, count = ffi.new("const jsoncontract_tv *[1]"), ffi.new("size_t[1]")
local errbuf = ffi.new("char[128]")
local big = "[" .. string.rep("1,", 99999) .. "1]"
for round = 1, 2 do
    local r = lib.jc_ffi_parse(ctx, big, #big, 1000, #big, entries, count, errbuf, 128)
    print("big", r, ffi.string(errbuf))
    r = lib.jc_ffi_parse(ctx, "[1,2,3]", 7, 1000, 7, entries, count, errbuf, 128)
    print("small", r, tonumber(count[0]))
end
lib.jc_ffi_free(ctx)
local v = core.compile({ type = "array" })
local ok, r = pcall(v.check_json, v, big)
print("check_json", ok, ok and #r or r)
print("check_json small", v:check_json("[1,2]"))
]]

describe("the FFI path out of memory", function()
    if not jffi.available then
        it("runs on LuaJIT", function() pending("FFI path not available: " .. tostring(jffi.reason)) end)
        return
    end

    it("answers not enough memory from the parse and stays usable", function()
        local dir = util.fresh_path()
        os.execute("mkdir -p " .. dir)
        local shim = dir .. "/fail_mmap.so"
        local out, code = util.sh("cc -shared -fPIC -o " .. shim .. " tools/fail_mmap.c -ldl")
        if code ~= 0 then pending("skipped: no C compiler for tools/fail_mmap.c: " .. out) return end
        local script = dir .. "/child.lua"
        local f = assert(io.open(script, "w"))
        f:write(CHILD:format(package.cpath:match("^[^;]+")))
        f:close()
        local res
        res, code = util.sh("JC_TEST_FAIL_OVER=1000000 LD_PRELOAD=" .. shim .. " luajit " .. script)
        os.execute("rm -rf " .. dir)
        assert.are.equal(0, code, res)
        local lines = {}
        for l in res:gmatch("[^\n]+") do lines[#lines + 1] = l end
        assert.are.same({
            "big\t-1\tnot enough memory", "small\t0\t4",
            "big\t-1\tnot enough memory", "small\t0\t4",
            "check_json\tfalse\tnot enough memory",
            "check_json small\t[1,2]",
        }, lines)
    end)
end)
