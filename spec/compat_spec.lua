-- jsoncontract.compat's clock: wall-clock seconds, read through LuaJIT's FFI on Linux, also when
-- another library declared clock_gettime first (with its own struct) and when the module is
-- loaded a second time in the same VM (the FFI's declarations outlive the module).

-- Another library of the same VM may have declared clock_gettime first with its own struct
-- (LuaJIT keeps the first declaration of a name): done here, before anything loads compat.
local has_ffi, ffi = pcall(require, "ffi")
if has_ffi and ffi.os == "Linux" then
    ffi.cdef [[
        struct jc_spec_other_timespec { long tv_sec; long tv_nsec; };
        int clock_gettime(int clock_id, struct jc_spec_other_timespec *tp);
    ]]
end

-- The FFI clock `m.now` reads, or nil (its upvalue `ffi_now`).
local function ffi_clock(m)
    for i = 1, 16 do
        local name, v = debug.getupvalue(m.now, i)
        if name == nil then return nil end
        if name == "ffi_now" then return v end
    end
end

describe("jsoncontract.compat.now", function()
    it("is the wall clock in seconds", function()
        local compat = require "jsoncontract.compat"
        local t = compat.now()
        assert.is_number(t)
        assert.truthy(math.abs(t - os.time()) <= 2, t .. " against " .. os.time())
    end)

    it("reads clock_gettime through the FFI on LuaJIT under Linux, whoever declared it first, also from a "
        .. "second load of the module",
        function()
        if not (type(jit) == "table" and jit.os == "Linux") then
            return pending("skipped: not LuaJIT on Linux (the clock is luasocket's or os.time)")
        end
        local first = require "jsoncontract.compat"
        package.loaded["jsoncontract.compat"] = nil
        local ok, again = pcall(require, "jsoncontract.compat")
        package.loaded["jsoncontract.compat"] = first
        assert(ok, again)
        assert.is_function(ffi_clock(first))
        assert.is_function(ffi_clock(again))
        local t = again.now()
        assert.truthy(math.abs(t - os.time()) <= 2, t .. " against " .. os.time())
        assert.truthy(t ~= math.floor(t) or again.now() ~= t, "a sub-second clock")
    end)
end)
