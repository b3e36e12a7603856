--- The FFI path on LuaJIT: the core's strict parser called through `ffi` (plain C entry
-- points, no `lua_CFunction` call), and the Lua value built from its tape by JIT-compiled
-- Lua (`table.new` with exact sizes, `ffi.string`), as lua-resty-core and lua-resty-simdjson
-- cross into C. The same C code decides; only the crossing and the value building differ.
--
-- Chosen case by case, by measurement (bench/decode_bench.lua, tape_bench.lua and
-- validate_bench.lua on LuaJIT): `validator:check_json` and `validator:validate(tape)`, which
-- build no Lua value, are faster through the FFI and are replaced by it when this module loads
-- (jsoncontract.contract loads it, so contracts and the nginx gateway use it); where a Lua
-- value is built (`decode`, `check`) the C API builder is faster than the JIT-built value, so
-- those keep the C API path, and `decode` and `check` here are there for a caller who
-- measures otherwise.
--
-- `available` is false (and `reason` says why) on PUC Lua, without `ffi`, when the core's
-- shared object cannot be found or its tape layout differs from the cdef below, or when
-- `JC_NO_FFI` is set in the environment (to compare the two paths). Then callers keep the
-- C API path.
-- @module jsoncontract.ffi
local core = require "jsoncontract.core"

local _M = { available = false }

local ok_ffi, ffi = pcall(require, "ffi")
if not ok_ffi or type(jit) ~= "table" then
    _M.reason = "no LuaJIT ffi"
    return _M
end
if os.getenv("JC_NO_FFI") then
    _M.reason = "JC_NO_FFI is set"
    return _M
end

local searchpath = rawget(package, "searchpath")   -- LuaJIT has it (a 5.2 extension)
local path = searchpath and searchpath("jsoncontract.core", package.cpath)
if not path then
    _M.reason = "jsoncontract.core's shared object not found on package.cpath"
    return _M
end

-- tape.h's jc_tv (checked against the C layout below) and ffi.c's entry points.
local ok_cdef, cdef_err = pcall(ffi.cdef, [[
typedef struct jsoncontract_ffi_ctx jsoncontract_ffi_ctx;
typedef struct {
    unsigned char kind;
    unsigned char flags;
    unsigned n;
    const char *s;
    union { size_t len; size_t end; int64_t i; double d; } u;
} jsoncontract_tv;
jsoncontract_ffi_ctx *jc_ffi_new(void);
void jc_ffi_free(jsoncontract_ffi_ctx *c);
size_t jc_ffi_layout(int what);
int jc_ffi_parse(jsoncontract_ffi_ctx *c, const char *text, size_t len, size_t max_depth,
                 size_t max_bytes, const jsoncontract_tv **entries, size_t *n, char *errbuf,
                 size_t errlen);
int jc_ffi_validate_tape(jsoncontract_ffi_ctx *c, void *validator, const void *tape, char *errbuf,
                         size_t errlen);
int jc_ffi_check(jsoncontract_ffi_ctx *c, void *validator, const char *text, size_t len,
                 size_t max_depth, size_t max_bytes, const jsoncontract_tv **entries, size_t *n,
                 size_t *b, size_t *e, char *errbuf, size_t errlen);
]])
if not ok_cdef then
    _M.reason = "ffi.cdef failed: " .. tostring(cdef_err)
    return _M
end

local ok_lib, lib = pcall(ffi.load, path)
if not ok_lib then
    _M.reason = "ffi.load failed: " .. tostring(lib)
    return _M
end

local layout = {
    ffi.sizeof("jsoncontract_tv"), ffi.offsetof("jsoncontract_tv", "flags"),
    ffi.offsetof("jsoncontract_tv", "n"), ffi.offsetof("jsoncontract_tv", "s"),
    ffi.offsetof("jsoncontract_tv", "u"),
}
for what = 0, 4 do
    if tonumber(lib.jc_ffi_layout(what)) ~= layout[what + 1] then
        _M.reason = "the core's tape layout differs from the cdef"
        return _M
    end
end
local MAX_DEPTH, MAX_BYTES = tonumber(lib.jc_ffi_layout(5)), tonumber(lib.jc_ffi_layout(6))

local ctx = lib.jc_ffi_new()
if ctx == nil then
    _M.reason = "jc_ffi_new failed (memory)"
    return _M
end
ctx = ffi.gc(ctx, lib.jc_ffi_free)

local ok_new, new_tab = pcall(require, "table.new")
if not ok_new then new_tab = function() return {} end end

local tonumber, setmetatable, select, type = tonumber, setmetatable, select, type
local ffi_string = ffi.string
local core_decode = core.decode
local null, array_mt = core.null, core.array_mt

local JT_BOOLEAN, JT_OBJECT, JT_ARRAY, JT_NUMBER, JT_STRING = 1, 2, 3, 4, 5
local JC_TF_TRUE, JC_TF_INT = 1, 2

-- Open containers while a value is built (reused: the builder never reenters, see 'busy').
local open_t, open_left, open_obj, open_count = { [0] = {} }, {}, {}, {}

-- The value of the n entries of tape 'v' as core.decode makes it on LuaJIT (numbers are
-- doubles, arrays carry array_mt, null is core.null). One flat loop over the entries in
-- document order (no recursion: the JIT compiles it as one trace), the open containers on
-- the 'open_*' stacks.
local function build(v, n)
    -- level 0 is a one-slot array that receives the root value; 'key' stays a string and
    -- 'want_key' a number (stable types keep the loop on one trace: true and false are two
    -- types to the JIT)
    local root = open_t[0]
    open_left[0], open_obj[0], open_count[0] = 1, false, 0
    local depth, key, want_key = 0, "", 0
    for i = 0, n - 1 do
        local e = v[i]
        if want_key == 1 then
            key = ffi_string(e.s, e.u.len)          -- a member name
            want_key = 0
        else
            local kind, size = e.kind, 0
            local val
            if kind == JT_STRING then
                val = ffi_string(e.s, e.u.len)
            elseif kind == JT_NUMBER then
                if e.flags == JC_TF_INT then val = tonumber(e.u.i) else val = e.u.d end
            elseif kind == JT_OBJECT then
                size = e.n
                val = new_tab(0, size)
            elseif kind == JT_ARRAY then
                size = e.n
                val = setmetatable(new_tab(size, 0), array_mt)
            elseif kind == JT_BOOLEAN then
                val = e.flags == JC_TF_TRUE
            else
                val = null
            end
            local parent = open_t[depth]
            if open_obj[depth] then
                parent[key] = val
            else
                local c = open_count[depth] + 1
                parent[c] = val
                open_count[depth] = c
            end
            open_left[depth] = open_left[depth] - 1
            if size > 0 then
                depth = depth + 1
                local is_obj = kind == JT_OBJECT
                open_t[depth], open_left[depth], open_obj[depth], open_count[depth] = val, size, is_obj, 0
                if is_obj then want_key = 1 end
            elseif depth == 0 or open_left[depth] > 0 then
                if open_obj[depth] then want_key = 1 end
            else
                -- the value closed its container, maybe more than one
                repeat
                    open_t[depth] = false
                    depth = depth - 1
                until depth == 0 or open_left[depth] > 0
                if open_obj[depth] and open_left[depth] > 0 then want_key = 1 end
            end
        end
    end
    local value = root[1]
    root[1] = nil
    return value
end

local entries = ffi.new("const jsoncontract_tv *[1]")
local count = ffi.new("size_t[1]")
local ERRLEN = 256
local errbuf = ffi.new("char[?]", ERRLEN)
-- Set while a value is built from the context's tape: a call made meanwhile (by a finalizer
-- the collector runs) takes the C API path and leaves the tape alone. Left set if building
-- raised (memory): every later call then takes the C API path.
local busy = false

--- `core.decode` through the FFI: the same value, err, limits and raises.
-- With options, a non-string text, extra arguments or while another call builds its value,
-- it is `core.decode` itself; a format error is reported by `core.decode` too (it parses the
-- text again: the err is the same by construction, and errors are the rare path).
-- @tparam string text JSON text
-- @tparam[opt] table opts as core.decode
-- @return value, or nil and err (as core.decode)
function _M.decode(...)
    local text = ...
    if select("#", ...) ~= 1 or busy or type(text) ~= "string" then
        return core_decode(...)
    end
    local r = lib.jc_ffi_parse(ctx, text, #text, MAX_DEPTH, MAX_BYTES, entries, count, errbuf, ERRLEN)
    if r ~= 0 then return core_decode(text) end
    busy = true
    local value = build(entries[0], tonumber(count[0]))
    busy = false
    return value
end

local bounds = ffi.new("size_t[2]")
local VALIDATOR_MT = getmetatable(core.compile(true))
local methods = VALIDATOR_MT.__index
-- The C API methods (kept: the FFI ones fall back to them, and specs compare with them).
local c_check_json, c_check, c_validate = methods.check_json, methods.check, methods.validate
_M.capi = { check_json = c_check_json, check = c_check, validate = c_validate, decode = core_decode }
local TAPE_MT = getmetatable(core.parse("1"))
local cast, voidp = ffi.cast, ffi.typeof("void *")
local sub = string.sub

--- `validator:check_json(text)` through the FFI: parse and the validator's verdict in one
-- FFI call, no Lua value built. A valid text gives what the C API gives (the text without
-- the JSON whitespace around it); anything else (options, a non-string text, a format or
-- schema error, a closed validator, a call while another builds its value) is
-- `validator:check_json` itself, so errs and raises are the C API's.
-- @param validator a compiled validator (core.compile)
-- @tparam string text JSON text
-- @param[opt] opts as validator:check_json
-- @return the accepted JSON text, or nil and err
function _M.check_json(validator, ...)
    local text = ...
    if select("#", ...) ~= 1 or busy or type(text) ~= "string" or getmetatable(validator) ~= VALIDATOR_MT then
        return c_check_json(validator, ...)
    end
    local len = #text
    local r = lib.jc_ffi_check(ctx, cast(voidp, validator), text, len, MAX_DEPTH, MAX_BYTES, entries,
        count, bounds, bounds + 1, errbuf, ERRLEN)
    if r ~= 0 then return c_check_json(validator, text) end
    local b, e = tonumber(bounds[0]), tonumber(bounds[1])
    if b == 0 and e == len then return text end
    return sub(text, b + 1, e)
end

--- `validator:check(text)` through the FFI: parse and verdict as check_json, then the Lua
-- value built from the tape by JIT-compiled Lua. Falls back to `validator:check` as
-- check_json does.
-- @param validator a compiled validator (core.compile)
-- @tparam string text JSON text
-- @param[opt] opts as validator:check
-- @return the value, or nil and err
function _M.check(validator, ...)
    local text = ...
    if select("#", ...) ~= 1 or busy or type(text) ~= "string" or getmetatable(validator) ~= VALIDATOR_MT then
        return c_check(validator, ...)
    end
    local r = lib.jc_ffi_check(ctx, cast(voidp, validator), text, #text, MAX_DEPTH, MAX_BYTES, entries,
        count, bounds, bounds + 1, errbuf, ERRLEN)
    if r ~= 0 then return c_check(validator, text) end
    busy = true
    local value = build(entries[0], tonumber(count[0]))
    busy = false
    return value
end

--- `validator:validate(tape)` through the FFI for a tape from core.parse: the verdict in one
-- FFI call (no `lua_CFunction` call); `true` when valid. Anything else (a Lua value, options,
-- an invalid value, a closed validator) is `validator:validate` itself: errs and raises are
-- the C API's.
-- @param validator a compiled validator (core.compile)
-- @param value a tape (core.parse) or a Lua value
-- @param[opt] opts as validator:validate
-- @return true, or nil and err (or the basic output, with opts)
function _M.validate(validator, ...)
    local value = ...
    if select("#", ...) == 1 and getmetatable(value) == TAPE_MT and getmetatable(validator) == VALIDATOR_MT
        and lib.jc_ffi_validate_tape(ctx, cast(voidp, validator), cast(voidp, value), errbuf, ERRLEN) == 0 then
        return true
    end
    return c_validate(validator, ...)
end

-- The parse alone (for the bench's profile): true, or false on a format error.
function _M.parse_only(text)
    return lib.jc_ffi_parse(ctx, text, #text, MAX_DEPTH, MAX_BYTES, entries, count, errbuf, ERRLEN) == 0
end

-- Measured case by case (bench/decode_bench.lua, tape_bench.lua and validate_bench.lua on
-- LuaJIT): the FFI check_json beats the C API method on the 1 KB reply (no value is built,
-- the call is cheaper), and validate(tape), which needs no Lua state for most verdicts, cuts
-- the call floor from 95 ns (C API) to about 8 (validate_bench.lua's "call floor"), so they
-- become the validators' methods; decode and check build a Lua value, where the C builder
-- wins, and keep the C API.
methods.check_json = _M.check_json
methods.validate = _M.validate
_M.installed = { check_json = true, validate = true }

_M.available = true
return _M
